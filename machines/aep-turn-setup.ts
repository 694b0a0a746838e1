// The AepTurn machine's vocabulary (docs/protocol/aep.md §8): input, events and context, what it is set up with, and
// the actions its states share (relaying worker events, holding them during delivery, finishing). The graph is
// aep-turn.ts.
import { assign, enqueueActions, fromPromise, setup } from "xstate";
import type { ErrorCode, ServerEvent } from "../aep/wire/envelope.js";
import {
  closeOpenMessages,
  errorCodeOf,
  interactionRequest,
  mapContent,
  type MappingState,
} from "../aep/wire/mapping.js";
import type { InteractionAnswer, WorkerEvent } from "../workers/types.js";
import { aepInteractionMachine, type AepInteractionReport } from "./aep-interaction.js";
import { endOf, statsOf, type TurnEnd, type TurnEndCause } from "./aep-turn-ends.js";

export interface AepTurnInput {
  executionId: string;
  clientMessageId: string;
  content: string;
  /** The worker process this turn runs on; its events are the only ones the session forwards here. */
  generation: number;
}

/** What arrives while the input is being delivered; it waits for the delivery and is then replayed in order. */
type HeldEvent = Extract<AepTurnEvent, { type: "WORKER" | "STOP" | "CONTROL" }>;

interface AepTurnContext extends AepTurnInput {
  mapping: MappingState;
  held: readonly HeldEvent[];
  started: boolean;
  errorSent: boolean;
  /** The reason the client's stop gave (done.reason of a stopped turn). */
  stopReason: string;
  /** Open interactions: request id → child actor id. */
  interactions: Readonly<Record<string, string>>;
  nextChild: number;
  end: TurnEnd | undefined;
}

export type AepTurnEvent =
  | { type: "WORKER"; event: WorkerEvent }
  | { type: "STOP"; reason?: string }
  /** A session control (gc, reset, cd, terminate, delete) takes the worker away: the turn ends stopped at once. */
  | { type: "CONTROL"; reason: string }
  | { type: "ANSWER"; id: string; answer: InteractionAnswer; clientMessageId?: string }
  | AepInteractionReport;

type Finished = Extract<WorkerEvent, { type: "turn.finished" }>;
const workerEvent = (event: AepTurnEvent): WorkerEvent | undefined =>
  event.type === "WORKER" ? event.event : undefined;
const finishedWith = (event: AepTurnEvent, outcome: Finished["outcome"]) => {
  const w = workerEvent(event);
  return w?.type === "turn.finished" && w.outcome === outcome;
};

const failedWithCode = (event: AepTurnEvent, code: ErrorCode) => {
  const w = workerEvent(event);
  return w?.type === "turn.finished" && w.outcome === "failed" && w.errorCode === code;
};

export const turnSetup = setup({
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
    rejectAnswer: (_, _params: { id: string; clientMessageId?: string | undefined }) => {},
    /** The end, with its cause, on the way into a final state (whose entry emits it). */
    recordEnd: assign(({ context, event }, params: { cause: TurnEndCause; detail?: string }) => ({
      end: endOf(params.cause, {
        w: workerEvent(event),
        control: event.type === "CONTROL" ? event.reason : undefined,
        stopReason: context.stopReason,
        detail: params.detail,
      }),
    })),
  },
  guards: {
    awaitingInteraction: ({ context }) => Object.keys(context.interactions).length > 0,
    noInteractionOpen: ({ context }) => Object.keys(context.interactions).length === 0,
    notAcknowledged: (_, params: { acked: boolean }) => !params.acked,
    resultCompleted: ({ event }) => finishedWith(event, "completed"),
    resultFailed: ({ event }) => finishedWith(event, "failed"),
    resultApiError: ({ event }) => finishedWith(event, "api_error"),
    resultLimit: ({ event }) => finishedWith(event, "limit"),
    resultStopped: ({ event }) => finishedWith(event, "stopped"),
    /** Any result other than success: while stopping, the worker honoured the stop. */
    resultNotCompleted: ({ event }) => {
      const w = workerEvent(event);
      return w?.type === "turn.finished" && w.outcome !== "completed";
    },
    workerExited: ({ event }) => workerEvent(event)?.type === "worker.exited",
    /** Killed by a SIGKILL this turn did not send (the OOM killer, an operator). */
    workerSigkilled: ({ event }) => {
      const w = workerEvent(event);
      return w?.type === "worker.exited" && w.signal === "SIGKILL";
    },
    /** The driver ended the turn because the worker's credentials were refused (docs/protocol/claude-code.md). */
    resultAuthFailed: ({ event }) => failedWithCode(event, "CONFIG_INVALID"),
    /** The driver ended the turn because an output line exceeded the line limit (the result may be in it). */
    resultOutputLimit: ({ event }) => failedWithCode(event, "WORKER_OUTPUT_LIMIT"),
    notStarted: ({ context }) => !context.started,
  },
  delays: {
    /** After an acknowledged interrupt the worker must end the turn within this, or it is killed. */
    stopGrace: 15_000,
    /** From the delivery: the turn fails TURN_TIMEOUT past it (aep.turnTimeoutMs; supplied by the wiring). */
    turnDeadline: 30 * 60_000,
    /** From the delivery: a worker that has not begun the turn by then fails it WORKER_TIMEOUT. */
    workerStartDeadline: 120_000,
  },
});

/** The effects of one worker event inside a running (or stopping) turn that does not end it. */
export const relay = turnSetup.createAction(
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
      case "tool.updated":
      case "tool.result":
      case "plan.updated":
      case "mode.updated":
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
        if (Object.hasOwn(context.interactions, w.id)) enqueue.stopChild(context.interactions[w.id]!);
        const child = `interaction-${context.nextChild}`;
        enqueue.assign({ interactions: { ...context.interactions, [w.id]: child }, nextChild: context.nextChild + 1 });
        enqueue.spawnChild("interaction", {
          id: child,
          input: { id: w.id, kind: w.kind, generation: context.generation, key: child },
        });
        emit(interactionRequest(w));
        return;
      }
      case "interaction.withdrawn":
        if (Object.hasOwn(context.interactions, w.id))
          enqueue.sendTo(context.interactions[w.id]!, { type: "WITHDRAW" });
        return;
      case "turn.error":
        enqueue.assign({ errorSent: true });
        emit({
          type: "error",
          data: { code: errorCodeOf(w.code), message: w.message, execution_id: context.executionId },
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

export const hold = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type === "WORKER" || event.type === "STOP" || event.type === "CONTROL")
      enqueue.assign({ held: [...context.held, event] });
  }),
);

/** Held events go back through the running state's own handlers, in arrival order. */
export const replayHeld = turnSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    enqueue.assign({ held: [] });
    for (const e of context.held) enqueue.raise(e);
  }),
);

export const routeAnswer = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "ANSWER") return;
    if (!Object.hasOwn(context.interactions, event.id))
      return enqueue({ type: "rejectAnswer", params: { id: event.id, clientMessageId: event.clientMessageId } });
    enqueue.sendTo(context.interactions[event.id]!, { type: "ANSWER", answer: event.answer });
  }),
);

const forgetInteraction = turnSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "INTERACTION_SETTLED" || !Object.hasOwn(context.interactions, event.id)) return;
    if (context.interactions[event.id] !== event.key) return;
    const { [event.id]: _gone, ...rest } = context.interactions;
    enqueue.assign({ interactions: rest });
  }),
);

export const cancelInteractions = turnSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const child of Object.values(context.interactions)) enqueue.sendTo(child, { type: "CANCEL" });
  }),
);

/** The one place a turn's terminal events are produced, in the order docs/protocol/aep.md requires. */
export const finish = turnSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    const end = context.end!;
    const emit = (event: ServerEvent) => enqueue({ type: "emit", params: { event, executionId: context.executionId } });
    for (const e of closeOpenMessages(context.mapping)) emit(e);
    if (end.outcome === "failed" && !context.errorSent)
      emit({ type: "error", data: { code: end.code, message: end.message, execution_id: context.executionId } });
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

export const endBy = (cause: TurnEndCause) => ({ type: "recordEnd" as const, params: { cause } });
export const ackDelivered = {
  type: "ack",
  params: ({ context }: { context: AepTurnContext }) => ({
    executionId: context.executionId,
    clientMessageId: context.clientMessageId,
    status: "delivered" as const,
  }),
} as const;
export const killWorker = {
  type: "killWorker",
  params: ({ context }: { context: AepTurnContext }) => ({ generation: context.generation }),
} as const;

/** What a live turn (running or stopping) does with answers, settled interactions and a session control. */
export const live = {
  ANSWER: { actions: routeAnswer },
  INTERACTION_SETTLED: { actions: forgetInteraction },
  CONTROL: { target: "#aepTurn.stopped", actions: endBy("session_control") },
} as const;
