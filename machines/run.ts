// Run: one agent run for one request_id (docs/protocol/cursor-run.md §7.1, §9, §10, §10.2–§10.6;
// docs/protocol/cursor-tools.md §3.1, §4; docs/protocol/cursor-transport.md §7.5). Loads the history (fetching blobs
// the store lacks from the client), then alternates ModelCall and ToolRound until the provider is done(stop), publishes
// the final checkpoint sequence and ends in exactly one of `succeeded`, `failed` or `canceled`. Every way to fail or
// be canceled is a cause in run-ends.ts and one branch of the `ending` decision state.
import { assign } from "xstate";
import { cancelCauses, failure, failureCauses, modelFailure, roundFailure, setupFailure } from "./run-ends.js";
import { frames } from "../cursor/frames.js";
import { ENDING, ignored, outsideEnds, recordCall, recordSummaryCall, roundIds } from "./run-setup.js";
import { runSetup, sendGets, switchedMode, unknownIdEnds } from "./run-setup.js";

export type { ContextMeasure, PreparedRun, RunEvent, RunInput } from "./run-setup.js";
export type { RunEnd } from "./run-ends.js";

export const runMachine = runSetup.createMachine({
  description:
    "One per run. Loads the history (fetching blobs the store lacks with get_blob_args and verifying their " +
    "SHA-256), then alternates model calls and tool rounds until the provider finishes with stop, then " +
    "publishes the final sequence. It has exactly three endings — succeeded, failed, canceled — each entered " +
    "once and each committing the run's terminal state and EndStream exactly once; every failure and cancel " +
    "goes through `ending`, whose branches name the cause. Cancel is accepted in every live state; during a " +
    "model call the pass is stopped first (closing an open thinking segment with its real elapsed time and " +
    "aborting the provider request), during a tool round the round first aborts its running execs. The first " +
    "reason to end wins, and events arriving after the end change nothing. Before each model call the run " +
    "measures the request: when it first crosses the model's compaction threshold, a summary call replaces the " +
    "older history (compacting) and the run measures again; a summarize_action run is one compaction.",
  id: "run",
  context: ({ input }) => ({
    ...input,
    callIndex: 0,
    nextExecId: 1,
    nextInteractionId: 1,
    nextKvId: 0,
    prepared: undefined,
    belowWindow: true,
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
              {
                guard: { type: "summarizes", params: ({ event }) => ({ prepared: event.output }) },
                target: "compacting",
                actions: assign({ prepared: ({ event }) => event.output }),
              },
              { target: "measuring", actions: assign({ prepared: ({ event }) => event.output }) },
            ],
            onError: {
              target: ENDING,
              actions: { type: "end", params: ({ event }) => ({ end: setupFailure(event.error) }) },
            },
          },
        },
        /** Before every model call: would its request cross the compaction threshold? */
        measuring: {
          invoke: {
            src: "measureContext",
            onDone: [
              {
                guard: { type: "crossesWindow", params: ({ event }) => ({ measure: event.output }) },
                target: "compacting",
                actions: assign({ belowWindow: false }),
              },
              {
                target: "calling",
                actions: assign({ belowWindow: ({ event }) => event.output.estimate <= event.output.limit }),
              },
            ],
            onError: {
              target: ENDING,
              actions: { type: "end", params: ({ event }) => ({ end: setupFailure(event.error) }) },
            },
          },
        },
        /** A summary call replaces the older history (docs/protocol/cursor-run.md §8.10): summary_started, the
         * summary, its checkpoint, summary_completed; then the run measures again (or, for summarize_action,
         * finishes). */
        compacting: {
          initial: "summarizing",
          entry: { type: "emitFrame", params: { message: frames.summaryStarted() } },
          states: {
            summarizing: {
              initial: "streaming",
              invoke: {
                id: "modelCall",
                src: "modelCall",
                input: ({ context }) => ({
                  callIndex: context.callIndex,
                  modelCallId: `${context.requestId}:${context.callIndex}`,
                  toolNames: [],
                  purpose: "summary" as const,
                }),
                onDone: [
                  { guard: "endRecorded", target: ENDING, actions: recordSummaryCall },
                  {
                    guard: { type: "providerFailed", params: ({ event }) => ({ output: event.output }) },
                    target: ENDING,
                    actions: [
                      recordSummaryCall,
                      { type: "end", params: ({ event }) => ({ end: modelFailure(event.output) }) },
                    ],
                  },
                  {
                    guard: { type: "modelBrokeProtocol", params: ({ event }) => ({ output: event.output }) },
                    target: ENDING,
                    actions: [
                      recordSummaryCall,
                      { type: "end", params: ({ event }) => ({ end: modelFailure(event.output) }) },
                    ],
                  },
                  {
                    guard: { type: "emptySummary", params: ({ event }) => ({ output: event.output }) },
                    target: ENDING,
                    actions: [
                      recordSummaryCall,
                      { type: "end", params: { end: failure("provider", "the summary call returned no text") } },
                    ],
                  },
                  {
                    target: "checkpointing",
                    actions: [
                      recordSummaryCall,
                      {
                        type: "emitFrame",
                        params: ({ event }) => ({
                          message: frames.summary(event.output.ok ? event.output.assistant.text : ""),
                        }),
                      },
                      assign({ callIndex: ({ context }) => context.callIndex + 1 }),
                    ],
                  },
                ],
              },
              on: { ...outsideEnds(".stopping", "stopCall"), ...unknownIdEnds(".stopping", "stopCall") },
              states: {
                streaming: {},
                stopping: {
                  on: {
                    ...ignored,
                    CLIENT_EXEC: {},
                    CLIENT_STREAM_CLOSE: {},
                    CLIENT_THROW: {},
                    CLIENT_INTERACTION: {},
                  },
                },
              },
            },
            checkpointing: {
              invoke: {
                src: "checkpoint",
                systemId: "checkpoint",
                input: ({ context }) => ({ kind: "compacted" as const, kvIdBase: context.nextKvId }),
                onDone: [
                  {
                    guard: { type: "checkpointFailed", params: ({ event }) => ({ ok: event.output.ok }) },
                    target: ENDING,
                    actions: {
                      type: "end",
                      params: ({ event }) => ({
                        end: failure("summary_checkpoint", event.output.error ?? "summary checkpoint failed"),
                      }),
                    },
                  },
                  {
                    guard: "summaryRun",
                    target: "#run.live.finalizing",
                    actions: [
                      assign({ nextKvId: ({ event }) => event.output.nextKvId }),
                      { type: "emitFrame", params: { message: frames.summaryCompleted() } },
                    ],
                  },
                  {
                    target: "#run.live.measuring",
                    actions: [
                      assign({ nextKvId: ({ event }) => event.output.nextKvId }),
                      { type: "emitFrame", params: { message: frames.summaryCompleted() } },
                    ],
                  },
                ],
              },
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
                target: "measuring",
                actions: assign(({ context, event }) => ({
                  ...roundIds(event.output),
                  nextKvId: event.output.nextKvId,
                  callIndex: context.callIndex + 1,
                  prepared: switchedMode({ ...context.prepared!, toolContext: event.output.ctx }, event.output.mode),
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
