// Run: one agent run for one request_id (docs/protocol/cursor-run.md §7.1, §9, §10, §10.2–§10.6;
// docs/protocol/cursor-tools.md §3.1, §4; docs/protocol/cursor-transport.md §7.5). Loads the history (fetching blobs
// the store lacks from the client), then alternates ModelCall and ToolRound until the provider is done(stop), publishes
// the final checkpoint sequence and ends in exactly one of `succeeded`, `failed` or `canceled`. Every way to fail or
// be canceled is a cause in run-ends.ts and one branch of the `ending` decision state.
import { assign, enqueueActions, fromPromise, sendTo, setup } from "xstate";
import { createHash } from "node:crypto";
import type { AgentServerMessage, ExecClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { frames } from "../cursor/frames.js";
import type { ToolContext, ToolInvocation } from "../cursor/tools/types.js";
import { checkpointMachine } from "./checkpoint.js";
import { modelCallMachine, type ModelCallOutput } from "./model-call.js";
import {
  type CancelCause,
  cancelCauses,
  canceled,
  type FailureCause,
  failure,
  failureCauses,
  modelFailure,
  type RunEnd,
  roundFailure,
  setupFailure,
} from "./run-ends.js";
import { toolRoundMachine, type ToolRoundOutput } from "./tool-round.js";
import type { ClientInteractionEvent } from "./tool-call.js";

export type { RunEnd } from "./run-ends.js";

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
  /** The calls of the tool round about to run. */
  roundCalls: ToolInvocation[] | undefined;
  gets: ReadonlyArray<{ id: number; blobId: Uint8Array; data?: Uint8Array }>;
  /** Why the run ends, recorded on the edge that decides it; the first reason wins. */
  end: RunEnd | undefined;
}

/** The ids a round used stay used for the rest of the request (docs/protocol/cursor-tools.md §3.1). */
const roundIds = (o: ToolRoundOutput) => ({ nextExecId: o.nextExecId, nextInteractionId: o.nextInteractionId });
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

const runSetup = setup({
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
    modelCall: modelCallMachine,
    toolRound: toolRoundMachine,
    checkpoint: checkpointMachine,
  },
  actions: {
    emitFrame: (_, _params: { message: AgentServerMessage }) => {},
    /** Hands a finished model call (response + usage) to the engine's history (supplied by the engine). */
    recordModelCall: (_, _params: { output: ModelCallOutput }) => {},
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
  },
  delays: { kvGetDeadline: 30_000 },
});

const sendGets = runSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const g of context.gets) enqueue({ type: "emitFrame", params: { message: frames.kvGet(g.id, g.blobId) } });
  }),
);

const ENDING = "#run.ending";
type Wind = "stopCall" | "cancelRound";

/** Cancel and the backlog bound: straight to `target`, first telling the running child to wind down. */
const outsideEnds = (target: string, wind?: Wind) =>
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
const unknownIdEnds = (target: string, wind?: Wind) => {
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
const ignored = { CANCEL: {}, BACKLOG_EXCEEDED: {} } as const;

/** Every finished model call reaches the engine's history, whatever the run does next. */
const recordCall = {
  type: "recordModelCall",
  params: ({ event }: { event: { output: ModelCallOutput } }) => ({ output: event.output }),
} as const;

export const runMachine = runSetup.createMachine({
  description:
    "One per run. Loads the history (fetching blobs the store lacks with get_blob_args and verifying their " +
    "SHA-256), then alternates model calls and tool rounds until the provider finishes with stop, then " +
    "publishes the final sequence. It has exactly three endings — succeeded, failed, canceled — each entered " +
    "once and each committing the run's terminal state and EndStream exactly once; every failure and cancel " +
    "goes through `ending`, whose branches name the cause. Cancel is accepted in every live state; during a " +
    "model call the pass is stopped first (closing an open thinking segment with its real elapsed time and " +
    "aborting the provider request), during a tool round the round first aborts its running execs. The first " +
    "reason to end wins, and events arriving after the end change nothing.",
  id: "run",
  context: ({ input }) => ({
    ...input,
    callIndex: 0,
    nextExecId: 1,
    nextInteractionId: 1,
    nextKvId: 0,
    prepared: undefined,
    roundCalls: undefined,
    gets: [],
    end: undefined,
  }),
  initial: "live",
  states: {
    live: {
      initial: "resolving",
      on: { ...outsideEnds(ENDING), ...unknownIdEnds(ENDING), KV_SET_RESULT: { actions: "forwardToCheckpoint" } },
      states: {
        resolving: {
          invoke: {
            src: "findMissingBlobs",
            onDone: [
              {
                guard: { type: "nothingMissing", params: ({ event }) => ({ missing: event.output }) },
                target: "preparing",
              },
              {
                target: "fetchingBlobs",
                actions: assign(({ context, event }) => ({
                  gets: event.output.map((blobId, i) => ({ id: context.nextKvId + i, blobId })),
                  nextKvId: context.nextKvId + event.output.length,
                })),
              },
            ],
            onError: {
              target: ENDING,
              actions: { type: "end", params: ({ event }) => ({ end: setupFailure(event.error) }) },
            },
          },
        },
        fetchingBlobs: {
          entry: sendGets,
          on: {
            KV_GET_RESULT: [
              {
                guard: "badGet",
                target: ENDING,
                actions: {
                  type: "end",
                  params: ({ event }) => ({
                    end: failure(
                      "bad_blob_reply",
                      `protocol error: get_blob_result ${event.id} is missing or does not match its blob id`,
                    ),
                  }),
                },
              },
              { actions: "recordGet" },
            ],
          },
          always: { guard: "allFetched", target: "preparing" },
          after: {
            kvGetDeadline: {
              target: ENDING,
              actions: {
                type: "end",
                params: { end: failure("blob_deadline", "protocol error: get_blob_args not answered in time") },
              },
            },
          },
        },
        preparing: {
          invoke: {
            src: "prepare",
            input: ({ context }) => ({ fetched: context.gets.map((g) => ({ blobId: g.blobId, data: g.data! })) }),
            onDone: [
              {
                guard: { type: "resumesToolRound", params: ({ event }) => ({ prepared: event.output }) },
                target: "toolRound",
                actions: assign({
                  prepared: ({ event }) => event.output,
                  roundCalls: ({ event }) => event.output.resumeRound,
                }),
              },
              { target: "calling", actions: assign({ prepared: ({ event }) => event.output }) },
            ],
            onError: {
              target: ENDING,
              actions: { type: "end", params: ({ event }) => ({ end: setupFailure(event.error) }) },
            },
          },
        },
        calling: {
          initial: "streaming",
          invoke: {
            id: "modelCall",
            src: "modelCall",
            input: ({ context }) => ({
              callIndex: context.callIndex,
              modelCallId: `${context.requestId}:${context.callIndex}`,
              toolNames: context.prepared!.toolNames,
            }),
            onDone: [
              { guard: "endRecorded", target: ENDING, actions: recordCall },
              {
                guard: { type: "providerFailed", params: ({ event }) => ({ output: event.output }) },
                target: ENDING,
                actions: [recordCall, { type: "end", params: ({ event }) => ({ end: modelFailure(event.output) }) }],
              },
              {
                guard: { type: "modelBrokeProtocol", params: ({ event }) => ({ output: event.output }) },
                target: ENDING,
                actions: [recordCall, { type: "end", params: ({ event }) => ({ end: modelFailure(event.output) }) }],
              },
              {
                guard: { type: "callWantsTools", params: ({ event }) => ({ output: event.output }) },
                target: "toolRound",
                actions: [
                  recordCall,
                  assign({ roundCalls: ({ event }) => (event.output.ok ? event.output.invocations : undefined) }),
                ],
              },
              { target: "finalizing", actions: recordCall },
            ],
          },
          // The pass closes its thinking segment and aborts its provider request; the run ends once it has.
          on: { ...outsideEnds(".stopping", "stopCall"), ...unknownIdEnds(".stopping", "stopCall") },
          states: {
            streaming: {},
            stopping: {
              on: { ...ignored, CLIENT_EXEC: {}, CLIENT_STREAM_CLOSE: {}, CLIENT_THROW: {}, CLIENT_INTERACTION: {} },
            },
          },
        },
        toolRound: {
          initial: "running",
          invoke: {
            id: "toolRound",
            src: "toolRound",
            input: ({ context }) => ({
              modelCallId: `${context.requestId}:${context.callIndex}`,
              calls: context.roundCalls!,
              ctx: context.prepared!.toolContext,
              execIdBase: context.nextExecId,
              interactionIdBase: context.nextInteractionId,
              kvIdBase: context.nextKvId,
            }),
            onDone: [
              {
                guard: "endRecorded",
                target: ENDING,
                actions: assign(({ event }) => roundIds(event.output)),
              },
              {
                guard: { type: "roundSettled", params: ({ event }) => ({ output: event.output }) },
                target: "calling",
                actions: assign(({ context, event }) => ({
                  ...roundIds(event.output),
                  nextKvId: event.output.nextKvId,
                  callIndex: context.callIndex + 1,
                })),
              },
              {
                guard: { type: "roundHitProtocolError", params: ({ event }) => ({ output: event.output }) },
                target: ENDING,
                actions: [
                  assign(({ event }) => roundIds(event.output)),
                  { type: "end", params: ({ event }) => ({ end: roundFailure("exec_protocol", event.output) }) },
                ],
              },
              {
                guard: { type: "roundCheckpointFailed", params: ({ event }) => ({ output: event.output }) },
                target: ENDING,
                actions: [
                  assign(({ event }) => roundIds(event.output)),
                  { type: "end", params: ({ event }) => ({ end: roundFailure("round_checkpoint", event.output) }) },
                ],
              },
            ],
          },
          // The round aborts its running execs before it ends (docs/protocol/cursor-run.md §10.2–§10.5).
          on: {
            ...outsideEnds(".stopping", "cancelRound"),
            CLIENT_EXEC: { actions: "forwardToRound" },
            CLIENT_STREAM_CLOSE: { actions: "forwardToRound" },
            CLIENT_THROW: { actions: "forwardToRound" },
            CLIENT_INTERACTION: { actions: "forwardToRound" },
          },
          states: { running: {}, stopping: { on: ignored } },
        },
        finalizing: {
          invoke: {
            src: "checkpoint",
            systemId: "checkpoint",
            input: ({ context }) => ({ kind: "final" as const, kvIdBase: context.nextKvId }),
            onDone: [
              {
                guard: { type: "checkpointPublished", params: ({ event }) => ({ ok: event.output.ok }) },
                target: "#run.succeeded",
                actions: { type: "end", params: { end: { kind: "succeeded" } } },
              },
              {
                guard: { type: "checkpointFailed", params: ({ event }) => ({ ok: event.output.ok }) },
                target: ENDING,
                actions: {
                  type: "end",
                  params: ({ event }) => ({
                    end: failure("final_checkpoint", event.output.error ?? "final checkpoint failed"),
                  }),
                },
              },
            ],
          },
        },
      },
    },
    /** Decides the ending from the recorded cause: one branch per cause, so each is its own edge and path. */
    ending: {
      always: [
        ...failureCauses.map((cause) => ({ guard: { type: "endedBy" as const, params: { cause } }, target: "failed" })),
        ...cancelCauses.map((cause) => ({
          guard: { type: "endedBy" as const, params: { cause } },
          target: "canceled",
        })),
      ],
    },
    succeeded: { type: "final", entry: { type: "finish", params: ({ context }) => ({ end: context.end! }) } },
    failed: { type: "final", entry: { type: "finish", params: ({ context }) => ({ end: context.end! }) } },
    canceled: { type: "final", entry: { type: "finish", params: ({ context }) => ({ end: context.end! }) } },
  },
});
