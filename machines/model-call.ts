// ModelCall: one provider pass (docs/protocol/cursor-run.md §7.2, §7.3, §7.4, §9; docs/protocol/cursor-tools.md §2).
// Consumes the unified ModelEvent stream, projects it live to the client (text, thinking, placeholder tool cards, edit
// streaming) and enforces the strict contract: one usage at most, every block closed, done(stop | toolUse) only;
// length, errors and anything out of contract fail the call. STOP (the run is being canceled or failed) ends the pass
// as `stopped`. A failing or stopped pass closes an open thinking segment at its real elapsed time first.
import { assign, enqueueActions, fromCallback, setup } from "xstate";
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalToolCall } from "../providers/messages.js";
import type { ModelEvent, ReplayState, Usage } from "../providers/types.js";
import { frames } from "../cursor/frames.js";
import { MCP_TOOL_PREFIX } from "../cursor/tools/mcp-tools.js";
import { toolDriver } from "../cursor/tools/registry.js";
import type { ArgsStreamer, ToolInvocation } from "../cursor/tools/types.js";

export interface ModelCallInput {
  callIndex: number;
  modelCallId: string;
  /** Tool names offered in this run's manifest; anything else is a protocol error. */
  toolNames: readonly string[];
  /** A summary call (docs/protocol/cursor-run.md §8.10) streams nothing to the client: its text becomes the
   * summary update once the call is done. Absent for the run's ordinary answer calls. */
  purpose?: "summary";
}

interface OpenToolCall {
  id: string;
  name: string;
  argsText: string;
  ended: boolean;
}

/** `stopped`: the run asked the pass to end (cancel, or a failure found outside the pass). */
type Failure = { kind: "provider" | "protocol" | "stopped"; message: string };

interface ModelCallContext extends ModelCallInput {
  text: string;
  thinking: string | undefined;
  thinkingStartedAt: number | undefined;
  thinkingMs: number;
  textOpen: boolean;
  tools: ReadonlyMap<number, OpenToolCall>;
  usage: Usage | undefined;
  replay: ReplayState | undefined;
  doneReason: "stop" | "toolUse" | undefined;
  failure: Failure | undefined;
}

export interface AssistantTurn {
  text: string;
  thinking?: string;
  thinkingDurationMs?: number;
  replay?: ReplayState;
  toolCalls: CanonicalToolCall[];
}

export type ModelCallOutput =
  | {
      ok: true;
      reason: "stop" | "toolUse";
      assistant: AssistantTurn;
      invocations: ToolInvocation[];
      usage: Usage | undefined;
    }
  | { ok: false; failure: Failure; usage: Usage | undefined };

export type ModelCallEvent =
  | { type: "MODEL"; event: ModelEvent }
  | { type: "PROVIDER_ERROR"; message: string; aborted: boolean }
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
    /** A text delta inside the open text block of a call that shows its text. */
    showsText: ({ context, event }) =>
      event.type === "MODEL" && event.event.type === "text_delta" && context.textOpen && context.purpose !== "summary",
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

/** The text a MODEL text_delta carries; the `showsText` guard admits no other event. */
const deltaText = (event: ModelCallEvent) =>
  event.type === "MODEL" && event.event.type === "text_delta" ? event.event.delta : "";

/**
 * The per-delta lane (issue 17): a shown text delta is one assign and one frame, without the general handler's
 * patch, contract checks and child bookkeeping, which each paced delta would pay in full. Anything else — a delta
 * outside a text block, a summary call's text — takes the general handler.
 */
const showText = [
  modelCallSetup.assign({ text: ({ context, event }) => context.text + deltaText(event) }),
  {
    type: "emitFrame",
    params: ({ event }: { event: ModelCallEvent }) => ({ message: frames.textDelta(deltaText(event)) }),
  },
] as const;

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
    "One provider pass. Streams text, thinking and placeholder tool cards to the client as they arrive and " +
    "enforces the strict contract: at most one usage, every block closed, done only with stop or toolUse. " +
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
            MODEL: [{ guard: "showsText", actions: showText }, { actions: onModelEvent }],
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

type Patch = Partial<ModelCallContext>;

/** Pure core of the pass: the next context for one ModelEvent, plus the frames it makes visible. */
function applyModelEvent(ctx: ModelCallContext, ev: ModelEvent, emitFrame: (m: AgentServerMessage) => void): Patch {
  const fail = (kind: Failure["kind"], message: string): Patch => ({ failure: { kind, message } });
  switch (ev.type) {
    case "start":
      return {};
    case "text_start":
      return ctx.textOpen ? fail("provider", "text block started twice") : { textOpen: true };
    case "text_delta":
      if (!ctx.textOpen) return fail("provider", "text delta outside a text block");
      emitFrame(frames.textDelta(ev.delta));
      return { text: ctx.text + ev.delta };
    case "text_end":
      return ctx.textOpen ? { textOpen: false } : fail("provider", "text block ended without start");
    case "thinking_start":
      return ctx.thinkingStartedAt !== undefined
        ? fail("provider", "thinking started while already thinking")
        : { thinkingStartedAt: Date.now(), thinking: ctx.thinking ?? "" };
    case "thinking_delta":
      if (ctx.thinkingStartedAt === undefined) return fail("provider", "thinking delta outside a thinking block");
      emitFrame(frames.thinkingDelta(ev.delta));
      return { thinking: (ctx.thinking ?? "") + ev.delta };
    case "thinking_end":
      if (ctx.thinkingStartedAt === undefined) return fail("provider", "thinking ended without start");
      {
        const elapsed = Math.max(1, Date.now() - ctx.thinkingStartedAt);
        emitFrame(frames.thinkingCompleted(elapsed));
        return { thinkingStartedAt: undefined, thinkingMs: ctx.thinkingMs + elapsed };
      }
    case "toolcall_start":
      return startToolCall(ctx, ev, emitFrame);
    case "toolcall_delta":
      return toolCallDelta(ctx, ev, emitFrame);
    case "toolcall_end":
      return endToolCall(ctx, ev);
    case "usage":
      if (ctx.usage) return fail("provider", "a second usage event in one model call");
      if (ev.usage.outputTokens !== undefined) emitFrame(frames.tokenDelta(ev.usage.outputTokens));
      return { usage: ev.usage };
    case "done":
      return finish(ctx, ev);
  }
}

function startToolCall(
  ctx: ModelCallContext,
  ev: Extract<ModelEvent, { type: "toolcall_start" }>,
  emitFrame: (m: AgentServerMessage) => void,
): Patch {
  // An MCP tool name (`mcp__…`) the run no longer offers still reaches its driver, which answers that the tool is gone
  // (docs/protocol/cursor-tools.md §5.15): a model repeating a call from its history gets a tool error, not a failure.
  const offered = ctx.toolNames.includes(ev.name) || ev.name.startsWith(MCP_TOOL_PREFIX);
  const driver = offered ? toolDriver(ev.name) : undefined;
  if (!driver)
    return { failure: { kind: "protocol", message: `model called unknown tool ${JSON.stringify(ev.name)}` } };
  if (ctx.tools.has(ev.index))
    return { failure: { kind: "provider", message: `tool call index ${ev.index} started twice` } };
  emitFrame(frames.partialToolCall(ev.id, ctx.modelCallId, driver.placeholder(ev.id)));
  const tools = new Map(ctx.tools);
  tools.set(ev.index, { id: ev.id, name: ev.name, argsText: "", ended: false });
  return { tools };
}

function toolCallDelta(
  ctx: ModelCallContext,
  ev: Extract<ModelEvent, { type: "toolcall_delta" }>,
  emitFrame: (m: AgentServerMessage) => void,
): Patch {
  const open = ctx.tools.get(ev.index);
  if (!open || open.ended)
    return { failure: { kind: "provider", message: `arguments for tool call index ${ev.index} outside its block` } };
  const driver = toolDriver(open.name)!;
  emitFrame(frames.partialToolCall(open.id, ctx.modelCallId, driver.placeholder(open.id), ev.delta));
  const tools = new Map(ctx.tools);
  tools.set(ev.index, { ...open, argsText: open.argsText + ev.delta });
  return { tools };
}

function endToolCall(ctx: ModelCallContext, ev: Extract<ModelEvent, { type: "toolcall_end" }>): Patch {
  const open = ctx.tools.get(ev.index);
  if (!open || open.ended)
    return { failure: { kind: "provider", message: `tool call index ${ev.index} ended without start` } };
  let args: unknown;
  try {
    args = JSON.parse(ev.argumentsJson);
  } catch {
    return { failure: { kind: "provider", message: `tool call ${open.name} arguments are not valid JSON` } };
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return { failure: { kind: "provider", message: `tool call ${open.name} arguments are not a JSON object` } };
  }
  const tools = new Map(ctx.tools);
  // Canonical argument text: re-serialised once so every later request replays identical bytes
  // (docs/protocol/cursor-run.md §8.1–§8.2).
  tools.set(ev.index, { ...open, argsText: JSON.stringify(args), ended: true });
  return { tools };
}

function finish(ctx: ModelCallContext, ev: Extract<ModelEvent, { type: "done" }>): Patch {
  const fail = (message: string): Patch => ({ failure: { kind: "provider", message } });
  if (ev.reason === "length") return fail("the model stopped at its output limit (finish reason length)");
  if (ctx.textOpen || ctx.thinkingStartedAt !== undefined)
    return fail("provider finished with an unclosed text or thinking block");
  if ([...ctx.tools.values()].some((t) => !t.ended)) return fail("provider finished with an unclosed tool call");
  if (ev.reason === "toolUse" && ctx.tools.size === 0)
    return fail("provider finished for tool use without any tool call");
  if (ev.reason === "stop" && ctx.tools.size > 0) return fail("provider finished with stop but produced tool calls");
  return { doneReason: ev.reason, ...(ev.replay ? { replay: ev.replay } : {}) };
}

function outputOf(ctx: ModelCallContext): ModelCallOutput {
  if (ctx.failure || !ctx.doneReason) {
    return {
      ok: false,
      failure: ctx.failure ?? { kind: "provider", message: "model call ended without done" },
      usage: ctx.usage,
    };
  }
  const ordered = [...ctx.tools.entries()].sort(([a], [b]) => a - b);
  const toolCalls = ordered.map(([index, t]) => ({ id: t.id, name: t.name, argumentsJson: t.argsText, index }));
  return {
    ok: true,
    reason: ctx.doneReason,
    usage: ctx.usage,
    assistant: {
      text: ctx.text,
      ...(ctx.thinking !== undefined ? { thinking: ctx.thinking, thinkingDurationMs: ctx.thinkingMs } : {}),
      ...(ctx.replay ? { replay: ctx.replay } : {}),
      toolCalls,
    },
    invocations: toolCalls.map((c) => ({
      callId: c.id,
      modelCallId: ctx.modelCallId,
      name: c.name,
      argumentsJson: c.argumentsJson,
      args: JSON.parse(c.argumentsJson) as Record<string, unknown>,
    })),
  };
}
