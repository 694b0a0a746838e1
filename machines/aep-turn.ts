// AepTurn: one execution of one accepted input (docs/protocol/aep.md §8, docs/protocol/aep.md). state(running) is its
// first event; input.ack(delivered|failed) follows the durable ledger write; runtime.execution.started precedes all
// content; the turn ends in exactly one final state — completed, failed or stopped — whose entry alone emits `error`
// (failed only), then `done`, then settles the runtime fact (runtime.execution.completed|failed after done). Worker
// events that arrive while the input is still being delivered are held and replayed in order.
import { assign } from "xstate";
import { initialMapping } from "../aep/wire/mapping.js";
import {
  ackDelivered,
  cancelInteractions,
  endBy,
  finish,
  hold,
  killWorker,
  live,
  relay,
  replayHeld,
  routeAnswer,
  turnSetup,
} from "./aep-turn-setup.js";

export type { AepTurnEvent, AepTurnInput } from "./aep-turn-setup.js";

export const aepTurnMachine = turnSetup.createMachine({
  description:
    "One per execution. state(running) is its first event; input.ack(delivered|failed) follows the durable " +
    "ledger write; runtime.execution.started precedes all content; worker events, stops and controls that " +
    "arrive before the delivery is confirmed are held and replayed in order. Stop interrupts the worker and " +
    "kills it if the interrupt is not acknowledged or not honoured within the grace. Every cause of an end is " +
    "its own edge — delivery failed, worker result success, error, API error or limit, credentials refused, " +
    "output line over the limit, interrupted by the worker, worker crash, SIGKILL, turn deadline, worker not " +
    "starting the turn, stop honoured, exit while stopping, killed after a stop, session control — into " +
    "exactly one of completed, failed, stopped, whose entry alone emits error (failed only), then done, then " +
    "settles the runtime fact after done.",
  id: "aepTurn",
  context: ({ input }) => ({
    ...input,
    mapping: initialMapping,
    held: [],
    started: false,
    errorSent: false,
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
        id: "deliver",
        input: ({ context }) => ({
          executionId: context.executionId,
          content: context.content,
          generation: context.generation,
        }),
        onDone: { target: "running", actions: ackDelivered },
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
            {
              type: "recordEnd",
              params: ({ event }) => ({
                cause: "not_delivered" as const,
                detail: String((event.error as Error | undefined)?.message ?? event.error),
              }),
            },
          ],
        },
      },
      on: {
        WORKER: { actions: hold },
        STOP: { actions: hold },
        CONTROL: { actions: hold },
        ANSWER: { actions: routeAnswer },
      },
    },
    running: {
      entry: replayHeld,
      initial: "streaming",
      // The worker goes with a turn that overran: the next input resumes its session in a new process.
      after: {
        turnDeadline: { target: "failed", actions: [killWorker, endBy("turn_timeout")] },
        workerStartDeadline: { guard: "notStarted", target: "failed", actions: [killWorker, endBy("worker_timeout")] },
      },
      on: {
        ...live,
        WORKER: [
          { guard: "resultCompleted", target: "completed", actions: endBy("finished") },
          { guard: "resultAuthFailed", target: "failed", actions: endBy("worker_auth") },
          { guard: "resultOutputLimit", target: "failed", actions: endBy("output_limit") },
          { guard: "resultFailed", target: "failed", actions: endBy("result_error") },
          { guard: "resultApiError", target: "failed", actions: endBy("api_error") },
          { guard: "resultLimit", target: "failed", actions: endBy("limit") },
          { guard: "resultStopped", target: "stopped", actions: endBy("interrupted") },
          { guard: "workerSigkilled", target: "failed", actions: endBy("sigkill") },
          { guard: "workerExited", target: "failed", actions: endBy("worker_crash") },
          { actions: relay },
        ],
        STOP: {
          target: "stopping",
          actions: assign({ stopReason: ({ event }) => event.reason ?? "stopped_by_user" }),
        },
      },
      states: {
        streaming: { always: { guard: "awaitingInteraction", target: "awaitingInteraction" } },
        awaitingInteraction: { always: { guard: "noInteractionOpen", target: "streaming" } },
      },
    },
    stopping: {
      entry: cancelInteractions,
      initial: "interrupting",
      // Counted from the stop, whatever the interrupt answered.
      after: { stopGrace: ".killing" },
      on: {
        ...live,
        WORKER: [
          { guard: "resultCompleted", target: "completed", actions: endBy("finished") },
          { guard: "resultNotCompleted", target: "stopped", actions: endBy("stop_honoured") },
          { guard: "workerExited", target: "stopped", actions: endBy("exited_while_stopping") },
          { actions: relay },
        ],
      },
      states: {
        interrupting: {
          invoke: {
            src: "interrupt",
            id: "interrupt",
            input: ({ context }) => ({ generation: context.generation }),
            onDone: [
              {
                guard: { type: "notAcknowledged", params: ({ event }) => ({ acked: event.output }) },
                target: "killing",
              },
              { target: "awaitingEnd" },
            ],
            onError: "killing",
          },
        },
        /** The worker acknowledged the interrupt; its result should follow within the grace. */
        awaitingEnd: {},
        killing: {
          entry: killWorker,
          on: { WORKER: { guard: "workerExited", target: "#aepTurn.stopped", actions: endBy("killed") } },
        },
      },
    },
    completed: { type: "final", entry: finish },
    failed: { type: "final", entry: finish },
    stopped: { type: "final", entry: finish },
  },
  output: ({ context }) => ({ executionId: context.executionId, end: context.end! }),
});
