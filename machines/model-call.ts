// ModelCall: one provider pass (docs/protocol/cursor-run.md §7.2, §7.3, §7.4, §9; docs/protocol/cursor-tools.md §2).
// Consumes the unified ModelEvent stream, projects it live to the client (text, thinking, placeholder tool cards, edit
// streaming) and enforces the strict contract: one usage at most, every block closed, done(stop | toolUse) only;
// length, errors and anything out of contract fail the call. STOP (the run is being canceled or failed) ends the pass
// as `stopped`. A failing or stopped pass closes an open thinking segment at its real elapsed time first.
import { assign, enqueueActions, fromCallback, setup } from "xstate";
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import type { ModelEvent } from "../providers/types.js";
import { frames } from "../cursor/frames.js";
import { toolDriver } from "../cursor/tools/registry.js";
import type { ArgsStreamer } from "../cursor/tools/types.js";
import {
  applyModelEvent,
  type Failure,
  type ModelCallContext,
  type ModelCallInput,
  type ModelCallOutput,
  outputOf,
} from "./model-call-contract.js";

export type ModelCallEvent =
  | { type: "MODEL"; event: ModelEvent }
  | { type: "PROVIDER_ERROR"; message: string; aborted: boolean }
  /** Text of the open text block that the provider actor already showed (the text lane, engine/pass-events.ts). */
  | { type: "TEXT"; text: string }
  | { type: "STREAM_END" }
  /** The run is ending for a reason of its own; stopping the provider actor aborts the HTTP request. */
  | { type: "STOP" }
  | ArgsProjected;

/** What an edit call's argument text made visible so far (docs/protocol/cursor-tools.md §5.6). */
type ArgsProjected = { type: "ARGS_PROJECTED"; index: number; updates: ReturnType<ArgsStreamer["push"]> };

interface ArgsProjectionInput {
  index: number;
  name: string;
  callId: string;
}

/**
 * The live projection of one tool call's argument text. The streamer parses JSON incrementally and keeps its parse
 * state, so it lives in this child actor rather than in the ModelCall's context.
 */
const argsProjection = fromCallback<{ type: "ARGS"; delta: string }, ArgsProjectionInput>(
  ({ input, receive, sendBack }) => {
    const streamer = toolDriver(input.name)?.argsStreamer?.(input.callId);
    receive((e) => {
      const updates = streamer?.push(e.delta) ?? [];
      if (updates.length) sendBack({ type: "ARGS_PROJECTED", index: input.index, updates } satisfies ArgsProjected);
    });
  },
);
const argsChild = (index: number) => `args-${index}`;

const modelCallSetup = setup({
  types: {
    context: {} as ModelCallContext,
    input: {} as ModelCallInput,
    output: {} as ModelCallOutput,
    events: {} as ModelCallEvent,
  },
  actors: {
    /** Streams the provider for this call (supplied by the engine); its cleanup aborts the HTTP request. */
    providerStream: fromCallback<ModelCallEvent, ModelCallInput>(() => () => {}),
    argsProjection,
  },
  actions: {
    emitFrame: (_, _params: { message: AgentServerMessage }) => {},
    markStopped: assign({ failure: { kind: "stopped", message: "model call stopped" } as Failure }),
  },
  guards: {
    /** The stream broke the contract (an out-of-order block, a second usage, finish length, ...). */
    brokeContract: ({ context }) => context.failure !== undefined,
    finished: ({ context }) => context.doneReason !== undefined,
  },
});

const onModelEvent = modelCallSetup.createAction(
  enqueueActions(({ context, event, enqueue, self }) => {
    if (event.type !== "MODEL") return;
    const ev = event.event;
    const patch = applyModelEvent(context, ev, (message) => {
      if (context.purpose !== "summary") enqueue({ type: "emitFrame", params: { message } });
    });
    enqueue.assign(patch);
    if (patch.failure) return;
    if (ev.type === "toolcall_start" && toolDriver(ev.name)?.argsStreamer)
      enqueue.spawnChild("argsProjection", {
        id: argsChild(ev.index),
        input: { index: ev.index, name: ev.name, callId: ev.id },
      });
    const projection = ev.type === "toolcall_delta" ? self.getSnapshot().children[argsChild(ev.index)] : undefined;
    if (projection && ev.type === "toolcall_delta") enqueue.sendTo(projection, { type: "ARGS", delta: ev.delta });
  }),
);

/** The provider actor showed these deltas of the open block itself: the pass only keeps their text. */
const keepText = modelCallSetup.assign({
  text: ({ context, event }) => (event.type === "TEXT" ? context.text + event.text : context.text),
});

const emitProjected = modelCallSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "ARGS_PROJECTED") return;
    const open = context.tools.get(event.index);
    if (!open) return;
    for (const out of event.updates) {
      const message =
        out.kind === "delta"
          ? frames.toolCallDelta(open.id, context.modelCallId, out.delta)
          : frames.partialToolCall(open.id, context.modelCallId, out.toolCall);
      enqueue({ type: "emitFrame", params: { message } });
    }
  }),
);

const failProvider = modelCallSetup.createAction(
  assign({
    failure: ({ event }) => ({
      kind: "provider" as const,
      message: event.type === "PROVIDER_ERROR" ? event.message : "provider stream ended without done",
    }),
  }),
);

/** A failing or stopped pass still closes its open thinking segment with the real elapsed time
 * (docs/protocol/cursor-run.md §7.4). */
const closeThinking = modelCallSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    if (context.thinkingStartedAt === undefined) return;
    if (context.purpose !== "summary")
      enqueue({
        type: "emitFrame",
        params: { message: frames.thinkingCompleted(Date.now() - context.thinkingStartedAt) },
      });
    enqueue.assign({ thinkingStartedAt: undefined });
  }),
);

export const modelCallMachine = modelCallSetup.createMachine({
  description:
    "One provider pass. Streams text, thinking and placeholder tool cards to the client as they arrive (the " +
    "deltas of an open text block are shown by the provider actor itself and reach the pass as one TEXT event " +
    "before the block's next event) and enforces the strict contract: at most one usage, every block closed, " +
    "done only with stop or toolUse. " +
    "HTTP errors, stream errors, a bare EOF, finish length and anything out of contract fail the call; an " +
    "open thinking segment is closed with its real elapsed time first. STOP from the run (cancel, or a " +
    "failure found outside the pass) ends it as stopped, closing thinking the same way. Each ending is its own " +
    "edge: a provider error, a bare EOF, a broken contract, STOP. A summary call shows nothing while it " +
    "streams: its text reaches the client as the run's summary update. Leaving `open` stops the provider actor, " +
    "which aborts the HTTP request, whether it is still waiting for headers or reading the body.",
  id: "modelCall",
  context: ({ input }) => ({
    ...input,
    text: "",
    thinking: undefined,
    thinkingStartedAt: undefined,
    thinkingMs: 0,
    textOpen: false,
    tools: new Map(),
    usage: undefined,
    replay: undefined,
    doneReason: undefined,
    failure: undefined,
  }),
  initial: "open",
  states: {
    /** The provider request is open; leaving this state (any ending) stops the actor and aborts the request. */
    open: {
      initial: "waitingForHeaders",
      invoke: {
        src: "providerStream",
        input: ({ context }) => ({
          callIndex: context.callIndex,
          modelCallId: context.modelCallId,
          toolNames: context.toolNames,
          ...(context.purpose ? { purpose: context.purpose } : {}),
        }),
      },
      on: {
        PROVIDER_ERROR: { target: "failed", actions: [closeThinking, failProvider] },
        /** A bare EOF: the stream ended without done. */
        STREAM_END: { target: "failed", actions: [closeThinking, failProvider] },
        STOP: { target: "stopped", actions: [closeThinking, "markStopped"] },
      },
      states: {
        waitingForHeaders: { on: { MODEL: { target: "streaming", actions: onModelEvent } } },
        streaming: {
          on: {
            MODEL: { actions: onModelEvent },
            TEXT: { actions: keepText },
            ARGS_PROJECTED: { actions: emitProjected },
          },
          always: [
            { guard: "brokeContract", target: "#modelCall.failed", actions: closeThinking },
            { guard: "finished", target: "#modelCall.done" },
          ],
        },
      },
    },
    done: { type: "final" },
    failed: { type: "final" },
    stopped: { type: "final" },
  },
  output: ({ context }) => outputOf(context),
});
