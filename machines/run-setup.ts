// The Run machine's vocabulary (docs/protocol/cursor-run.md §7.1, §10): its input, events and context, the actors,
// actions and guards it is set up with, and the transition pieces several of its states share. The graph is run.ts.
import { assign, enqueueActions, fromPromise, sendTo, setup } from "xstate";
import { createHash } from "node:crypto";
import type { AgentServerMessage, ExecClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { frames } from "../cursor/frames.js";
import type { ModeSwitch, ToolContext, ToolInvocation } from "../cursor/tools/types.js";
import { checkpointMachine } from "./checkpoint.js";
import { modelCallMachine } from "./model-call.js";
import type { ModelCallOutput } from "./model-call-contract.js";
import { type CancelCause, canceled, type FailureCause, failure, type RunEnd } from "./run-ends.js";
import { toolRoundMachine, type ToolRoundOutput } from "./tool-round.js";
import type { ClientInteractionEvent } from "./tool-call.js";

export interface RunInput {
  requestId: string;
  conversationId: string;
}

export interface PreparedRun {
  toolNames: string[];
  toolContext: ToolContext;
  /** A resumed checkpoint with a pending tool round: its calls run first, without a model call
   * (docs/protocol/cursor-run.md §11). */
  resumeRound?: ToolInvocation[];
  /** A summarize_action run: one summary call over the whole history, then the final checkpoint
   * (docs/protocol/cursor-run.md §8.10). */
  summarize?: boolean;
}

/** How large the next model request would be, against the model's compaction threshold
 * (docs/protocol/cursor-run.md §8.10). */
export interface ContextMeasure {
  /** Estimated input tokens of the next request. */
  estimate: number;
  /** The threshold: the context window less the safety margin and the output reserve. */
  limit: number;
  /** How many messages a summary would replace (a previous summary not counted). */
  summarizable: number;
}

export type RunEvent =
  | { type: "CLIENT_EXEC"; id: number; message: ExecClientMessage["message"] }
  | { type: "CLIENT_STREAM_CLOSE"; id: number }
  | { type: "CLIENT_THROW"; id: number; error: string }
  | ClientInteractionEvent
  | { type: "KV_SET_RESULT"; id: number; error?: string }
  | { type: "KV_GET_RESULT"; id: number; data: Uint8Array | undefined }
  | { type: "CANCEL"; cause: CancelCause; reason: string }
  /** The engine cannot carry the run any further: its stream hit the backlog bound. */
  | { type: "BACKLOG_EXCEEDED"; message: string };

interface RunContext extends RunInput {
  callIndex: number;
  nextExecId: number;
  nextInteractionId: number;
  nextKvId: number;
  prepared: PreparedRun | undefined;
  /** The last measured request was below the compaction threshold: the next one above it is a crossing, and only a
   * crossing compacts (docs/protocol/cursor-run.md §8.10). */
  belowWindow: boolean;
  /** The calls of the tool round about to run. */
  roundCalls: ToolInvocation[] | undefined;
  gets: ReadonlyArray<{ id: number; blobId: Uint8Array; data?: Uint8Array }>;
  /** Why the run ends, recorded on the edge that decides it; the first reason wins. */
  end: RunEnd | undefined;
}

/** After an approved SwitchMode the next model call offers the new mode's tools, and the next round's calls know the
 * mode (docs/protocol/cursor-tools.md §6.5). */
export const switchedMode = (prepared: PreparedRun, mode: ModeSwitch | undefined): PreparedRun =>
  mode ? { ...prepared, toolNames: mode.toolNames, toolContext: { ...prepared.toolContext, mode: mode.id } } : prepared;

/** The ids a round used stay used for the rest of the request (docs/protocol/cursor-tools.md §3.1). */
export const roundIds = (o: ToolRoundOutput) => ({ nextExecId: o.nextExecId, nextInteractionId: o.nextInteractionId });
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest();
const isClientExec = (e: RunEvent): e is Extract<RunEvent, { id: number; type: `CLIENT_${string}` }> =>
  e.type === "CLIENT_EXEC" || e.type === "CLIENT_STREAM_CLOSE" || e.type === "CLIENT_THROW";
/** Both bridges' client messages, with the family their id belongs to. */
const bridgeId = (c: RunContext, e: RunEvent) =>
  e.type === "CLIENT_INTERACTION"
    ? { id: e.id, next: c.nextInteractionId, what: "interaction response for unknown interaction id" }
    : isClientExec(e)
      ? { id: e.id, next: c.nextExecId, what: "exec message for unknown exec id" }
      : undefined;

export const runSetup = setup({
  types: {
    context: {} as RunContext,
    input: {} as RunInput,
    events: {} as RunEvent,
  },
  actors: {
    /** Which history blobs the store lacks (they must come from the client with get_blob_args). */
    findMissingBlobs: fromPromise<Uint8Array[], void>(async () => []),
    /** Resolves model and mode, rebuilds history, appends the runtime message exactly once. */
    prepare: fromPromise<PreparedRun, { fetched: Array<{ blobId: Uint8Array; data: Uint8Array }> }>(async () => {
      throw new Error("prepare must be supplied by the engine");
    }),
    /** The size of the next model request and the compaction threshold (supplied by the engine). */
    measureContext: fromPromise<ContextMeasure, void>(async () => ({ estimate: 0, limit: 1, summarizable: 0 })),
    modelCall: modelCallMachine,
    toolRound: toolRoundMachine,
    checkpoint: checkpointMachine,
  },
  actions: {
    emitFrame: (_, _params: { message: AgentServerMessage }) => {},
    /** Hands a finished model call (response + usage) to the engine's history (supplied by the engine). */
    recordModelCall: (_, _params: { output: ModelCallOutput }) => {},
    /** Hands a finished summary call to the engine, which compacts the history with it (supplied by the engine). */
    recordSummary: (_, _params: { output: ModelCallOutput }) => {},
    /** Terminal commit + EndStream, exactly once (supplied by the engine). */
    finish: (_, _params: { end: RunEnd }) => {},
    /** The first reason to end wins: a later cancel or failure does not rewrite why the run ended. */
    end: assign({ end: ({ context }, params: { end: RunEnd }) => context.end ?? params.end }),
    recordGet: assign({
      gets: ({ context, event }) =>
        event.type === "KV_GET_RESULT"
          ? context.gets.map((g) => (g.id === event.id && event.data ? { ...g, data: event.data } : g))
          : context.gets,
    }),
    forwardToRound: sendTo("toolRound", ({ event }) => event),
    /** The round aborts its running execs before it ends. */
    cancelRound: sendTo("toolRound", { type: "CANCEL" }),
    forwardToCheckpoint: enqueueActions(({ event, enqueue, system }) => {
      const checkpoint = system.get("checkpoint");
      if (checkpoint && event.type === "KV_SET_RESULT") enqueue.sendTo(checkpoint, event);
    }),
    /** The model call closes its open thinking segment and aborts its provider request before it ends. */
    stopCall: sendTo("modelCall", { type: "STOP" }),
  },
  guards: {
    /** Outside a tool round only late tails of finished execs are legal (docs/protocol/cursor-tools.md §3.1). */
    unknownId: ({ context, event }) => {
      const b = bridgeId(context, event);
      return b !== undefined && b.id >= b.next;
    },
    /** The run already knows why it ends (its running child was told to wind down). */
    endRecorded: ({ context }) => context.end !== undefined,
    endedBy: ({ context }, params: { cause: FailureCause | CancelCause }) =>
      context.end?.kind !== "succeeded" && context.end?.cause === params.cause,
    badGet: ({ context, event }) => {
      if (event.type !== "KV_GET_RESULT") return false;
      const g = context.gets.find((x) => x.id === event.id);
      return !g || !event.data || hex(sha256(event.data)) !== hex(g.blobId);
    },
    allFetched: ({ context }) => context.gets.every((g) => g.data !== undefined),
    nothingMissing: (_, params: { missing: Uint8Array[] }) => params.missing.length === 0,
    providerFailed: (_, params: { output: ModelCallOutput }) =>
      !params.output.ok && params.output.failure.kind === "provider",
    modelBrokeProtocol: (_, params: { output: ModelCallOutput }) =>
      !params.output.ok && params.output.failure.kind === "protocol",
    callWantsTools: (_, params: { output: ModelCallOutput }) => params.output.ok && params.output.reason === "toolUse",
    roundSettled: (_, params: { output: ToolRoundOutput }) => params.output.outcome.kind === "ok",
    roundHitProtocolError: (_, params: { output: ToolRoundOutput }) => params.output.outcome.kind === "protocol",
    roundCheckpointFailed: (_, params: { output: ToolRoundOutput }) => params.output.outcome.kind === "checkpoint",
    checkpointPublished: (_, params: { ok: boolean }) => params.ok,
    checkpointFailed: (_, params: { ok: boolean }) => !params.ok,
    resumesToolRound: (_, params: { prepared: PreparedRun }) => (params.prepared.resumeRound?.length ?? 0) > 0,
    summarizes: (_, params: { prepared: PreparedRun }) => params.prepared.summarize === true,
    summaryRun: ({ context }) => context.prepared?.summarize === true,
    /** Compact once per crossing: the request is over the threshold, the last one was not, and there is
     * something older than the kept turns to summarize. */
    crossesWindow: ({ context }, params: { measure: ContextMeasure }) =>
      context.belowWindow && params.measure.estimate > params.measure.limit && params.measure.summarizable > 0,
    emptySummary: (_, params: { output: ModelCallOutput }) =>
      params.output.ok && params.output.assistant.text.trim() === "",
  },
  delays: { kvGetDeadline: 30_000 },
});

export const sendGets = runSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const g of context.gets) enqueue({ type: "emitFrame", params: { message: frames.kvGet(g.id, g.blobId) } });
  }),
);

export const ENDING = "#run.ending";
type Wind = "stopCall" | "cancelRound";

/** Cancel and the backlog bound: straight to `target`, first telling the running child to wind down. */
export const outsideEnds = (target: string, wind?: Wind) =>
  runSetup.createStateConfig({
    on: {
      CANCEL: {
        target,
        actions: [
          { type: "end", params: ({ event }) => ({ end: canceled(event.cause, event.reason) }) },
          ...(wind ? [wind] : []),
        ],
      },
      BACKLOG_EXCEEDED: {
        target,
        actions: [
          { type: "end", params: ({ event }) => ({ end: failure("backlog", event.message) }) },
          ...(wind ? [wind] : []),
        ],
      },
    },
  }).on!;

/** An Exec message or interaction response for an id never issued, outside a tool round
 * (docs/protocol/cursor-transport.md §7.5). */
export const unknownIdEnds = (target: string, wind?: Wind) => {
  const transition = {
    guard: "unknownId" as const,
    target,
    actions: [
      {
        type: "end" as const,
        params: ({ context, event }: { context: RunContext; event: RunEvent }) => {
          const b = bridgeId(context, event);
          return { end: failure("unknown_id", `protocol error: ${b?.what} ${b?.id}`) };
        },
      },
      ...(wind ? [wind] : []),
    ],
  };
  return runSetup.createStateConfig({
    on: {
      CLIENT_EXEC: transition,
      CLIENT_STREAM_CLOSE: transition,
      CLIENT_THROW: transition,
      CLIENT_INTERACTION: transition,
    },
  }).on!;
};

/** While a child winds down the reason is already recorded: later ones are taken and change nothing. */
export const ignored = { CANCEL: {}, BACKLOG_EXCEEDED: {} } as const;

/** Every finished model call reaches the engine's history, whatever the run does next. */
export const recordCall = {
  type: "recordModelCall",
  params: ({ event }: { event: { output: ModelCallOutput } }) => ({ output: event.output }),
} as const;

/** A finished summary call reaches the engine the same way, whatever the run does next. */
export const recordSummaryCall = {
  type: "recordSummary",
  params: ({ event }: { event: { output: ModelCallOutput } }) => ({ output: event.output }),
} as const;
