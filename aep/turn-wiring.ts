// A session's turns as the AepTurn machine runs them: delivery to the worker (the ledger holds the delivery fact before
// the turn announces it), interrupts, interaction answers, and what the turn emits and records, supplied with
// .provide() over the session's ports.
import { fromPromise } from "xstate";
import type { Logger } from "../log/logger.js";
import { aepInteractionMachine } from "../machines/aep-interaction.js";
import { aepTurnMachine } from "../machines/aep-turn.js";
import type { TurnEnd } from "../machines/aep-turn-ends.js";
import type { AepStore } from "../store/index.js";
import type { ServerEvent } from "./wire/envelope.js";
import type { WorkerProcesses } from "./worker-processes.js";

/** What the turn machine reaches of its session. */
export interface TurnPorts {
  sessionId: string;
  store: AepStore;
  log: Logger;
  workers: WorkerProcesses;
  emit(event: ServerEvent, executionId?: string): void;
  /** Waits for the write in the session's order (its failure is the session's to report). */
  afterWrite(write: Promise<void>): void;
  settleRuntime(executionId: string, end: TurnEnd): void;
  rejectAnswer(_: unknown, params: { id: string; clientMessageId?: string | undefined }): void;
  turnTimeoutMs?: number;
}

export function provideTurn(p: TurnPorts) {
  const { store, log } = p;
  return aepTurnMachine.provide({
    actors: {
      deliver: fromPromise(
        async ({ input }: { input: { executionId: string; content: string; generation: number } }) => {
          // Either way the ledger holds the delivery fact before the turn announces it.
          try {
            await p.workers.send(input.generation, { inputId: input.executionId, content: input.content });
          } catch (err) {
            await store.setDelivery(input.executionId, "failed", "WORKER_START_FAILED");
            throw err;
          }
          await store.setDelivery(input.executionId, "delivered");
        },
      ),
      interrupt: fromPromise(
        async ({ input }: { input: { generation: number } }) =>
          (await p.workers.get(input.generation)?.interrupt()) ?? false,
      ),
      interaction: aepInteractionMachine.provide({
        actions: {
          sendAnswer: (_, { id, generation, answer }) => {
            p.workers
              .get(generation)
              ?.answer(id, answer)
              .catch((err: unknown) => log.warn("aep answer not written", { session_id: p.sessionId, error: err }));
          },
        },
      }),
    },
    actions: {
      emit: (_, { event, executionId }) => p.emit(event, executionId),
      ack: (_, { executionId, clientMessageId, status, errorCode }) =>
        p.emit({
          type: "input.ack",
          data: {
            client_message_id: clientMessageId,
            execution_id: executionId,
            status,
            ...(errorCode ? { error_code: errorCode } : {}),
          },
        }),
      recordStarted: (_, { executionId }) => p.afterWrite(store.setRuntime(executionId, "started")),
      settleRuntime: (_, { executionId, end }) => p.settleRuntime(executionId, end),
      killWorker: (_, { generation }) => p.workers.get(generation)?.kill(),
      rejectAnswer: p.rejectAnswer,
    },
    ...(p.turnTimeoutMs ? { delays: { turnDeadline: p.turnTimeoutMs } } : {}),
  });
}
