// Run: one agent run for one request_id (docs/protocol/cursor-run.md §7.1, §9, §10, §10.2–§10.6;
// docs/protocol/cursor-tools.md §3.1, §4; docs/protocol/cursor-transport.md §7.5). Loads the history (fetching blobs
// the store lacks from the client), then alternates ModelCall and ToolRound until the provider is done(stop), publishes
// the final checkpoint sequence and ends in exactly one of `succeeded`, `failed` or `canceled`.
import { assign, enqueueActions, fromPromise, sendTo, setup } from "xstate";
import { createHash } from "node:crypto";
import type { AgentServerMessage, ExecClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { frames } from "../cursor/frames.js";
import type { ToolContext, ToolInvocation } from "../cursor/tools/types.js";
import { checkpointMachine } from "./checkpoint.js";
import { modelCallMachine, type ModelCallOutput } from "./model-call.js";
import { toolRoundMachine } from "./tool-round.js";

export interface RunInput {
  requestId: string;
  conversationId: string;
}

/** What the run ended as; the engine turns it into the EndStream and the terminal store commit. */
export type RunEnd =
  | { kind: "succeeded" }
  | {
      kind: "failed";
      code: "unavailable" | "invalid_argument" | "failed_precondition" | "internal" | "resource_exhausted";
      message: string;
      cause: "provider" | "protocol" | "checkpoint" | "setup" | "limit";
    }
  | { kind: "canceled"; reason: string };

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
  | { type: "KV_SET_RESULT"; id: number; error?: string }
  | { type: "KV_GET_RESULT"; id: number; data: Uint8Array | undefined }
  | { type: "CANCEL"; reason: string }
  /** The engine cannot carry the run any further (e.g. its stream hit the backlog bound). */
  | { type: "FAIL"; message: string };

interface RunContext extends RunInput {
  callIndex: number;
  nextExecId: number;
  nextKvId: number;
  prepared: PreparedRun | undefined;
  /** The calls of the tool round about to run. */
  roundCalls: ToolInvocation[] | undefined;
  gets: ReadonlyArray<{ id: number; blobId: Uint8Array; data?: Uint8Array }>;
  /** A cancel or failure that arrived during a tool round, applied once the round has aborted its execs. */
  interruption: RunEnd | undefined;
  end: RunEnd | undefined;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest();

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
    end: assign({ end: (_, params: { end: RunEnd }) => params.end }),
    recordGet: assign({
      gets: ({ context, event }) =>
        event.type === "KV_GET_RESULT"
          ? context.gets.map((g) => (g.id === event.id && event.data ? { ...g, data: event.data } : g))
          : context.gets,
    }),
    forwardToRound: sendTo("toolRound", ({ event }) => event),
    /** The round aborts its running execs before it ends; the run then takes the recorded interruption. */
    cancelRound: sendTo("toolRound", { type: "CANCEL" }),
    /** The first reason to end wins: a later cancel or failure does not rewrite why the run ended. */
    interrupt: assign({ interruption: ({ context }, params: { end: RunEnd }) => context.interruption ?? params.end }),
    forwardToCheckpoint: enqueueActions(({ event, enqueue, system }) => {
      const checkpoint = system.get("checkpoint");
      if (checkpoint && event.type === "KV_SET_RESULT") enqueue.sendTo(checkpoint, event);
    }),
    /** The model call closes its open thinking segment and aborts its provider request before it ends. */
    stopCall: sendTo("modelCall", { type: "STOP" }),
  },
  guards: {
    /** Outside a tool round only late tails of finished execs are legal (docs/protocol/cursor-tools.md §3.1). */
    unknownExec: ({ context, event }) =>
      (event.type === "CLIENT_EXEC" || event.type === "CLIENT_STREAM_CLOSE" || event.type === "CLIENT_THROW") &&
      event.id >= context.nextExecId,
    interrupted: ({ context }) => context.interruption !== undefined,
    endedFailed: ({ context }) => context.end?.kind === "failed",
    endedCanceled: ({ context }) => context.end?.kind === "canceled",
    badGet: ({ context, event }) => {
      if (event.type !== "KV_GET_RESULT") return false;
      const g = context.gets.find((x) => x.id === event.id);
      return !g || !event.data || hex(sha256(event.data)) !== hex(g.blobId);
    },
    allFetched: ({ context }) => context.gets.every((g) => g.data !== undefined),
    nothingMissing: (_, params: { missing: Uint8Array[] }) => params.missing.length === 0,
    callFailed: (_, params: { output: ModelCallOutput }) => !params.output.ok,
    callWantsTools: (_, params: { output: ModelCallOutput }) => params.output.ok && params.output.reason === "toolUse",
    roundSettled: (_, params: { outcome: { kind: string } }) => params.outcome.kind === "ok",
    checkpointPublished: (_, params: { ok: boolean }) => params.ok,
    resumesToolRound: (_, params: { prepared: PreparedRun }) => (params.prepared.resumeRound?.length ?? 0) > 0,
  },
  delays: { kvGetDeadline: 30_000 },
});

const sendGets = runSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const g of context.gets) enqueue({ type: "emitFrame", params: { message: frames.kvGet(g.id, g.blobId) } });
  }),
);

export const runMachine = runSetup.createMachine({
  description:
    "One per run. Loads the history (fetching blobs the store lacks with get_blob_args and verifying their " +
    "SHA-256), then alternates model calls and tool rounds until the provider finishes with stop, then " +
    "publishes the final sequence. It has exactly three endings — succeeded, failed, canceled — each entered " +
    "once and each committing the run's terminal state and EndStream exactly once. Cancel is accepted in " +
    "every non-final state; during a model call the pass is stopped first (closing an open thinking segment " +
    "with its real elapsed time and aborting the provider request), during a tool round the round first " +
    "aborts its running execs. The first reason to end wins, and events arriving after the end change " +
    "nothing.",
  id: "run",
  context: ({ input }) => ({
    ...input,
    callIndex: 0,
    nextExecId: 1,
    nextKvId: 0,
    prepared: undefined,
    roundCalls: undefined,
    gets: [],
    interruption: undefined,
    end: undefined,
  }),
  initial: "resolving",
  on: {
    CANCEL: { actions: { type: "end", params: ({ event }) => ({ end: canceled(event.reason) }) } },
    FAIL: { actions: { type: "end", params: ({ event }) => ({ end: limitFailure(event.message) }) } },
    KV_SET_RESULT: { actions: "forwardToCheckpoint" },
    CLIENT_EXEC: {
      guard: "unknownExec",
      actions: { type: "end", params: ({ event }) => ({ end: unknownExec(event) }) },
    },
    CLIENT_STREAM_CLOSE: {
      guard: "unknownExec",
      actions: { type: "end", params: ({ event }) => ({ end: unknownExec(event) }) },
    },
    CLIENT_THROW: {
      guard: "unknownExec",
      actions: { type: "end", params: ({ event }) => ({ end: unknownExec(event) }) },
    },
  },
  always: [
    { guard: "endedFailed", target: ".failed" },
    { guard: "endedCanceled", target: ".canceled" },
  ],
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
        onError: { actions: { type: "end", params: ({ event }) => ({ end: setupFailure(event.error) }) } },
      },
    },
    fetchingBlobs: {
      entry: sendGets,
      on: {
        KV_GET_RESULT: [
          {
            guard: "badGet",
            actions: {
              type: "end",
              params: ({ event }) => ({
                end: {
                  kind: "failed",
                  code: "invalid_argument",
                  cause: "protocol",
                  message: `protocol error: get_blob_result ${event.id} is missing or does not match its blob id`,
                },
              }),
            },
          },
          { actions: "recordGet" },
        ],
      },
      always: { guard: "allFetched", target: "preparing" },
      after: {
        kvGetDeadline: {
          actions: {
            type: "end",
            params: {
              end: {
                kind: "failed",
                code: "invalid_argument",
                cause: "protocol",
                message: "protocol error: get_blob_args not answered in time",
              },
            },
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
        onError: { actions: { type: "end", params: ({ event }) => ({ end: setupFailure(event.error) }) } },
      },
    },
    calling: {
      invoke: {
        id: "modelCall",
        src: "modelCall",
        input: ({ context }) => ({
          callIndex: context.callIndex,
          modelCallId: `${context.requestId}:${context.callIndex}`,
          toolNames: context.prepared!.toolNames,
        }),
        onDone: [
          {
            guard: "interrupted",
            actions: [
              { type: "recordModelCall", params: ({ event }) => ({ output: event.output }) },
              { type: "end", params: ({ context }) => ({ end: context.interruption! }) },
            ],
          },
          {
            guard: { type: "callFailed", params: ({ event }) => ({ output: event.output }) },
            actions: [
              { type: "recordModelCall", params: ({ event }) => ({ output: event.output }) },
              { type: "end", params: ({ event }) => ({ end: modelFailure(event.output) }) },
            ],
          },
          {
            guard: { type: "callWantsTools", params: ({ event }) => ({ output: event.output }) },
            target: "toolRound",
            actions: [
              { type: "recordModelCall", params: ({ event }) => ({ output: event.output }) },
              assign({ roundCalls: ({ event }) => (event.output.ok ? event.output.invocations : undefined) }),
            ],
          },
          {
            target: "finalizing",
            actions: [{ type: "recordModelCall", params: ({ event }) => ({ output: event.output }) }],
          },
        ],
      },
      on: {
        // The pass closes its thinking segment and aborts its provider request; the run then takes the interruption.
        CANCEL: {
          actions: [{ type: "interrupt", params: ({ event }) => ({ end: canceled(event.reason) }) }, "stopCall"],
        },
        FAIL: {
          actions: [{ type: "interrupt", params: ({ event }) => ({ end: limitFailure(event.message) }) }, "stopCall"],
        },
        CLIENT_EXEC: {
          guard: "unknownExec",
          actions: [{ type: "interrupt", params: ({ event }) => ({ end: unknownExec(event) }) }, "stopCall"],
        },
        CLIENT_STREAM_CLOSE: {
          guard: "unknownExec",
          actions: [{ type: "interrupt", params: ({ event }) => ({ end: unknownExec(event) }) }, "stopCall"],
        },
        CLIENT_THROW: {
          guard: "unknownExec",
          actions: [{ type: "interrupt", params: ({ event }) => ({ end: unknownExec(event) }) }, "stopCall"],
        },
      },
    },
    toolRound: {
      invoke: {
        id: "toolRound",
        src: "toolRound",
        input: ({ context }) => ({
          modelCallId: `${context.requestId}:${context.callIndex}`,
          calls: context.roundCalls!,
          ctx: context.prepared!.toolContext,
          execIdBase: context.nextExecId,
          kvIdBase: context.nextKvId,
        }),
        onDone: [
          {
            guard: "interrupted",
            actions: [
              assign({ nextExecId: ({ event }) => event.output.nextExecId }),
              { type: "end", params: ({ context }) => ({ end: context.interruption! }) },
            ],
          },
          {
            guard: { type: "roundSettled", params: ({ event }) => ({ outcome: event.output.outcome }) },
            target: "calling",
            actions: assign(({ context, event }) => ({
              nextExecId: event.output.nextExecId,
              nextKvId: event.output.nextKvId,
              callIndex: context.callIndex + 1,
            })),
          },
          {
            actions: [
              assign({ nextExecId: ({ event }) => event.output.nextExecId }),
              { type: "end", params: ({ event }) => ({ end: roundFailure(event.output.outcome) }) },
            ],
          },
        ],
      },
      on: {
        // The round aborts its running execs before it ends; the run follows its outcome (docs/protocol/cursor-run.md
        // §10.2–§10.5).
        CANCEL: {
          actions: [{ type: "interrupt", params: ({ event }) => ({ end: canceled(event.reason) }) }, "cancelRound"],
        },
        FAIL: {
          actions: [
            { type: "interrupt", params: ({ event }) => ({ end: limitFailure(event.message) }) },
            "cancelRound",
          ],
        },
        CLIENT_EXEC: { actions: "forwardToRound" },
        CLIENT_STREAM_CLOSE: { actions: "forwardToRound" },
        CLIENT_THROW: { actions: "forwardToRound" },
      },
    },
    finalizing: {
      invoke: {
        src: "checkpoint",
        systemId: "checkpoint",
        input: ({ context }) => ({ kind: "final" as const, kvIdBase: context.nextKvId }),
        onDone: [
          {
            guard: { type: "checkpointPublished", params: ({ event }) => ({ ok: event.output.ok }) },
            target: "succeeded",
            actions: { type: "end", params: { end: { kind: "succeeded" } } },
          },
          {
            actions: {
              type: "end",
              params: ({ event }) => ({
                end: {
                  kind: "failed",
                  code: "unavailable",
                  cause: "checkpoint",
                  message: event.output.error ?? "final checkpoint failed",
                },
              }),
            },
          },
        ],
      },
    },
    succeeded: { type: "final", entry: { type: "finish", params: ({ context }) => ({ end: context.end! }) } },
    failed: { type: "final", entry: { type: "finish", params: ({ context }) => ({ end: context.end! }) } },
    canceled: { type: "final", entry: { type: "finish", params: ({ context }) => ({ end: context.end! }) } },
  },
});

const canceled = (reason: string): RunEnd => ({ kind: "canceled", reason });
const unknownExec = (event: { id: number }): RunEnd => ({
  kind: "failed",
  code: "invalid_argument",
  cause: "protocol",
  message: `protocol error: exec message for unknown exec id ${event.id}`,
});
const limitFailure = (message: string): RunEnd => ({
  kind: "failed",
  code: "resource_exhausted",
  cause: "limit",
  message,
});

function modelFailure(output: ModelCallOutput): RunEnd {
  if (output.ok) return { kind: "failed", code: "internal", cause: "provider", message: "unexpected model output" };
  return output.failure.kind === "protocol"
    ? {
        kind: "failed",
        code: "invalid_argument",
        cause: "protocol",
        message: `protocol error: ${output.failure.message}`,
      }
    : { kind: "failed", code: "unavailable", cause: "provider", message: output.failure.message };
}

function roundFailure(outcome: { kind: string; message?: string }): RunEnd {
  return outcome.kind === "protocol"
    ? { kind: "failed", code: "invalid_argument", cause: "protocol", message: `protocol error: ${outcome.message}` }
    : { kind: "failed", code: "unavailable", cause: "checkpoint", message: outcome.message ?? "tool round failed" };
}

/** Errors thrown by the engine's setup steps carry their own Connect code (see engine/run-errors). */
function setupFailure(error: unknown): RunEnd {
  const e = error as { code?: string; message?: string };
  const code = e.code === "invalid_argument" || e.code === "failed_precondition" ? e.code : "internal";
  return {
    kind: "failed",
    code,
    cause: code === "invalid_argument" ? "protocol" : "setup",
    message: e.message ?? String(error),
  };
}
