// AepTurn: one execution of one accepted input (docs/protocol/aep.md §8, docs/protocol/aep.md). state(running) is its
// first event; input.ack(delivered|failed) follows the durable ledger write; runtime.execution.started precedes all
// content; the turn ends in exactly one final state — completed, failed or stopped — whose entry alone emits `error`
// (failed only), then `done`, then settles the runtime fact (runtime.execution.completed|failed after done). Worker
// events that arrive while the input is still being delivered are held and replayed in order.
import { assign, enqueueActions, fromPromise, setup } from "xstate";
import type { ErrorCode, ServerEvent } from "../aep/wire/envelope.js";
import {
  closeOpenMessages,
  errorCodeOf,
  initialMapping,
  interactionRequest,
  mapContent,
  type MappingState,
} from "../aep/wire/mapping.js";
import type { InteractionAnswer, TurnUsage, WorkerEvent } from "../workers/types.js";
import { aepInteractionMachine, type AepInteractionReport } from "./aep-interaction.js";

export interface AepTurnInput {
  executionId: string;
  clientMessageId: string;
  content: string;
  /** The worker process this turn runs on; its events are the only ones the session forwards here. */
  generation: number;
}

export type TurnEnd =
  | { outcome: "completed"; usage?: TurnUsage }
  | { outcome: "failed"; code: ErrorCode; message: string; usage?: TurnUsage }
  | { outcome: "stopped"; reason: string; usage?: TurnUsage };

interface AepTurnContext extends AepTurnInput {
  mapping: MappingState;
  held: WorkerEvent[];
  started: boolean;
  errorSent: boolean;
  stopRequested: boolean;
  stopReason: string;
  /** Open interactions: request id → child actor id. */
  interactions: Record<string, string>;
  nextChild: number;
  end: TurnEnd | undefined;
}

export type AepTurnEvent =
  | { type: "WORKER"; event: WorkerEvent }
  | { type: "STOP"; reason?: string }
  | { type: "ANSWER"; id: string; answer: InteractionAnswer }
  | AepInteractionReport;

const turnSetup = setup({
  types: {
    context: {} as AepTurnContext,
    input: {} as AepTurnInput,
    events: {} as AepTurnEvent,
  },
  actors: {
    /** Writes the input to the worker and records delivered (or failed, then rejects) in the ledger. */
    deliver: fromPromise<void, { executionId: string; content: string; generation: number }>(async () => {
      throw new Error("deliver must be supplied by the session wiring");
    }),
    /** The worker's interrupt; resolves whether it was acknowledged within its bound. */
    interrupt: fromPromise<boolean, { generation: number }>(async () => false),
    interaction: aepInteractionMachine,
  },
  actions: {
    /** Through the session's sequencer, tagged with this execution (supplied by the wiring). */
    emit: (_, _params: { event: ServerEvent; executionId: string }) => {},
    /** input.ack for the delivery fact `deliver` has already written to the ledger. */
    ack: (
      _,
      _params: { executionId: string; clientMessageId: string; status: "delivered" | "failed"; errorCode?: ErrorCode },
    ) => {},
    /** Records runtime `started` in the ledger (supplied by the wiring). */
    recordStarted: (_, _params: { executionId: string }) => {},
    /** Persists the runtime outcome, then announces runtime.execution.completed|failed (after done). */
    settleRuntime: (_, _params: { executionId: string; end: TurnEnd }) => {},
    /** Kills the worker of `generation` (interrupt not acknowledged or not honoured). */
    killWorker: (_, _params: { generation: number }) => {},
    /** A response for a request this turn does not hold open (supplied by the wiring: an INVALID_MESSAGE error). */
    rejectAnswer: (_, _params: { id: string }) => {},
  },
  guards: {
    stopWasRequested: ({ context }) => context.stopRequested,
    awaitingInteraction: ({ context }) => Object.keys(context.interactions).length > 0,
    noInteractionOpen: ({ context }) => Object.keys(context.interactions).length === 0,
    notAcknowledged: (_, params: { acked: boolean }) => !params.acked,
    endedCompleted: ({ context }) => context.end?.outcome === "completed",
    endedFailed: ({ context }) => context.end?.outcome === "failed",
    endedStopped: ({ context }) => context.end?.outcome === "stopped",
  },
  delays: {
    /** After an acknowledged interrupt the worker must end the turn within this, or it is killed. */
    stopGrace: 15_000,
  },
});

/** The effects of one worker event inside a running (or stopping) turn. */
const relay = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "WORKER") return;
    const w = event.event;
    const emit = (e: ServerEvent) => enqueue({ type: "emit", params: { event: e, executionId: context.executionId } });
    switch (w.type) {
      case "input.started":
      case "turn.started":
        if (context.started || (w.type === "input.started" && (w.mode !== "turn" || w.inputId !== context.executionId)))
          return;
        enqueue.assign({ started: true });
        enqueue({ type: "recordStarted", params: { executionId: context.executionId } });
        emit({
          type: "runtime.execution.started",
          data: { execution_id: context.executionId, status: "started", started_at: Date.now() },
        });
        return;
      case "text.delta":
      case "text.completed":
      case "reasoning.delta":
      case "reasoning.completed":
      case "tool.called":
      case "tool.result":
      case "step":
      case "raw":
      case "context.usage":
      case "mcp.status": {
        const { state, events } = mapContent(context.mapping, w);
        enqueue.assign({ mapping: state });
        for (const e of events) emit(e);
        return;
      }
      case "interaction.requested": {
        const previous = context.interactions[w.id];
        if (previous) enqueue.stopChild(previous);
        const child = `interaction-${context.nextChild}`;
        enqueue.assign({ interactions: { ...context.interactions, [w.id]: child }, nextChild: context.nextChild + 1 });
        enqueue.spawnChild("interaction", {
          id: child,
          input: { id: w.id, kind: w.kind, generation: context.generation, key: child },
        });
        emit(interactionRequest(w));
        return;
      }
      case "interaction.withdrawn": {
        const child = context.interactions[w.id];
        if (child) enqueue.sendTo(child, { type: "WITHDRAW" });
        return;
      }
      case "turn.error":
        enqueue.assign({ errorSent: true });
        emit({ type: "error", data: { code: errorCodeOf(w.code), message: w.message } });
        return;
      case "turn.finished":
        enqueue.assign({ end: endOf(context, w) });
        return;
      case "worker.exited":
        enqueue.assign({
          end: context.stopRequested
            ? { outcome: "stopped", reason: context.stopReason }
            : {
                outcome: "failed",
                code: "WORKER_CRASH",
                message: `worker exited during the turn (code ${w.code}, signal ${w.signal})`,
              },
        });
        return;
      case "worker.ready":
        // Which worker and version serve this turn (a client may show it; the e2e tests pin the CLI version by it).
        emit({
          type: "raw",
          data: {
            kind: "worker.ready",
            raw: { version: w.version, model: w.model, permission_mode: w.permissionMode },
          },
        });
        return;
      default:
        return; // input.queued/completed: ledger facts, nothing for the client here
    }
  }),
);

function endOf(context: AepTurnContext, w: Extract<WorkerEvent, { type: "turn.finished" }>): TurnEnd {
  const usage = w.usage;
  if (w.outcome === "completed") return { outcome: "completed", usage };
  if (w.outcome === "stopped" || context.stopRequested)
    return { outcome: "stopped", reason: context.stopRequested ? context.stopReason : "interrupted", usage };
  // docs/protocol/aep.md has no code for an upstream error or a turn limit; the message says which it was.
  return { outcome: "failed", code: errorCodeOf(w.errorCode), message: w.message ?? `turn ${w.outcome}`, usage };
}

const holdWorkerEvent = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type === "WORKER") enqueue.assign({ held: [...context.held, event.event] });
  }),
);

/** Held events go back through the running state's own handler, in arrival order. */
const replayHeld = turnSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    enqueue.assign({ held: [] });
    for (const w of context.held) enqueue.raise({ type: "WORKER", event: w });
  }),
);

const routeAnswer = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "ANSWER") return;
    const child = Object.hasOwn(context.interactions, event.id) ? context.interactions[event.id] : undefined;
    if (!child) return enqueue({ type: "rejectAnswer", params: { id: event.id } });
    enqueue.sendTo(child, { type: "ANSWER", answer: event.answer });
  }),
);

const forgetInteraction = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "INTERACTION_SETTLED" || context.interactions[event.id] !== event.key) return;
    const { [event.id]: _gone, ...rest } = context.interactions;
    enqueue.assign({ interactions: rest });
  }),
);

const cancelInteractions = turnSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const child of Object.values(context.interactions)) enqueue.sendTo(child, { type: "CANCEL" });
  }),
);

/** The one place a turn's terminal events are produced, in the order docs/protocol/aep.md requires. */
const finish = turnSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    const end = context.end!;
    const emit = (event: ServerEvent) => enqueue({ type: "emit", params: { event, executionId: context.executionId } });
    for (const e of closeOpenMessages(context.mapping)) emit(e);
    if (end.outcome === "failed" && !context.errorSent)
      emit({ type: "error", data: { code: end.code, message: end.message } });
    emit({
      type: "done",
      data: {
        success: end.outcome === "completed",
        ...(end.usage ? { stats: statsOf(end.usage) } : {}),
        ...(end.outcome === "stopped" ? { reason: end.reason } : {}),
      },
    });
    enqueue({ type: "settleRuntime", params: { executionId: context.executionId, end } });
  }),
);

function statsOf(u: TurnUsage): Record<string, unknown> {
  const stats: Record<string, unknown> = {
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_read_tokens: u.cacheReadTokens,
    cache_write_tokens: u.cacheWriteTokens,
    total_cost_usd: u.costUsd,
    duration_ms: u.durationMs,
    num_turns: u.numTurns,
  };
  return Object.fromEntries(Object.entries(stats).filter(([, v]) => v !== undefined));
}

const hasEnded = [
  { guard: "endedCompleted" as const, target: "#aepTurn.completed" },
  { guard: "endedFailed" as const, target: "#aepTurn.failed" },
  { guard: "endedStopped" as const, target: "#aepTurn.stopped" },
];

export const aepTurnMachine = turnSetup.createMachine({
  description:
    "One per execution. state(running) is its first event; input.ack(delivered|failed) follows the durable " +
    "ledger write; runtime.execution.started precedes all content; worker events that arrive before the " +
    "delivery is confirmed are held and replayed in order. Stop interrupts the worker and kills it if the " +
    "interrupt is not acknowledged or not honoured within the grace. It ends in exactly one of completed, " +
    "failed, stopped, whose entry alone emits error (failed only), then done, then settles the runtime fact " +
    "after done.",
  id: "aepTurn",
  context: ({ input }) => ({
    ...input,
    mapping: initialMapping,
    held: [],
    started: false,
    errorSent: false,
    stopRequested: false,
    stopReason: "stopped_by_user",
    interactions: {},
    nextChild: 0,
    end: undefined,
  }),
  initial: "delivering",
  states: {
    delivering: {
      entry: {
        type: "emit",
        params: ({ context }) => ({
          event: { type: "state", data: { state: "running" } },
          executionId: context.executionId,
        }),
      },
      invoke: {
        src: "deliver",
        input: ({ context }) => ({
          executionId: context.executionId,
          content: context.content,
          generation: context.generation,
        }),
        onDone: [
          {
            guard: "stopWasRequested",
            target: "stopping",
            actions: {
              type: "ack",
              params: ({ context }) => ({
                executionId: context.executionId,
                clientMessageId: context.clientMessageId,
                status: "delivered" as const,
              }),
            },
          },
          {
            target: "running",
            actions: {
              type: "ack",
              params: ({ context }) => ({
                executionId: context.executionId,
                clientMessageId: context.clientMessageId,
                status: "delivered" as const,
              }),
            },
          },
        ],
        onError: {
          target: "failed",
          actions: [
            {
              type: "ack",
              params: ({ context }) => ({
                executionId: context.executionId,
                clientMessageId: context.clientMessageId,
                status: "failed" as const,
                errorCode: "WORKER_START_FAILED" as const,
              }),
            },
            assign({
              end: ({ event }) => ({
                outcome: "failed" as const,
                code: "WORKER_START_FAILED" as const,
                message: `input not delivered to the worker: ${String((event.error as Error)?.message ?? event.error)}`,
              }),
            }),
          ],
        },
      },
      on: {
        WORKER: { actions: holdWorkerEvent },
        STOP: {
          actions: assign({ stopRequested: true, stopReason: ({ event }) => event.reason ?? "stopped_by_user" }),
        },
        ANSWER: { actions: routeAnswer },
      },
    },
    running: {
      entry: replayHeld,
      initial: "streaming",
      always: hasEnded,
      on: {
        WORKER: { actions: relay },
        ANSWER: { actions: routeAnswer },
        INTERACTION_SETTLED: { actions: forgetInteraction },
        STOP: {
          target: "stopping",
          actions: assign({ stopRequested: true, stopReason: ({ event }) => event.reason ?? "stopped_by_user" }),
        },
      },
      states: {
        streaming: { always: { guard: "awaitingInteraction", target: "awaitingInteraction" } },
        awaitingInteraction: { always: { guard: "noInteractionOpen", target: "streaming" } },
      },
    },
    stopping: {
      entry: [replayHeld, cancelInteractions],
      always: hasEnded,
      invoke: {
        src: "interrupt",
        input: ({ context }) => ({ generation: context.generation }),
        onDone: {
          guard: { type: "notAcknowledged", params: ({ event }) => ({ acked: event.output }) },
          actions: { type: "killWorker", params: ({ context }) => ({ generation: context.generation }) },
        },
        onError: { actions: { type: "killWorker", params: ({ context }) => ({ generation: context.generation }) } },
      },
      after: {
        stopGrace: { actions: { type: "killWorker", params: ({ context }) => ({ generation: context.generation }) } },
      },
      on: {
        WORKER: { actions: relay },
        ANSWER: { actions: routeAnswer },
        INTERACTION_SETTLED: { actions: forgetInteraction },
      },
    },
    completed: { type: "final", entry: finish },
    failed: { type: "final", entry: finish },
    stopped: { type: "final", entry: finish },
  },
  output: ({ context }) => ({ executionId: context.executionId, end: context.end! }),
});
