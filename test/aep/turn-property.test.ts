// AepTurn under arbitrary interleavings (docs/protocol/aep.md §8): whatever the worker reports and the client asks, in
// whatever order — double stop, stop racing the result, answers racing withdrawals, a crash anywhere — the events go
// through the real Sequencer without a single refusal, there is exactly one done, and the runtime fact follows it.
import { expect } from "chai";
import fc from "fast-check";
import { createActor, fromPromise } from "xstate";
import type { ServerEvent } from "../../aep/wire/envelope.js";
import { Sequencer } from "../../aep/wire/sequencer.js";
import { aepInteractionMachine } from "../../machines/aep-interaction.js";
import { aepTurnMachine, type AepTurnEvent } from "../../machines/aep-turn.js";
import type { WorkerEvent } from "../../workers/types.js";

const worker = (event: WorkerEvent): AepTurnEvent => ({ type: "WORKER", event });

const step = fc.oneof(
  fc.constantFrom<AepTurnEvent>(
    worker({ type: "turn.started", inputId: "x1" }),
    worker({ type: "text.delta", blockId: "b1", text: "a" }),
    worker({ type: "text.completed", blockId: "b1", text: "a" }),
    worker({ type: "text.delta", blockId: "b2", text: "b" }),
    worker({ type: "reasoning.delta", blockId: "r", text: "t" }),
    worker({ type: "tool.called", id: "t", name: "Bash", input: {} }),
    worker({ type: "tool.result", id: "t", output: "ok", isError: false }),
    worker({ type: "interaction.requested", id: "p", kind: "permission", payload: { tool_name: "Bash" } }),
    worker({ type: "interaction.withdrawn", id: "p" }),
    worker({ type: "turn.error", code: "api_error", message: "boom" }),
    worker({ type: "turn.finished", outcome: "completed" }),
    worker({ type: "turn.finished", outcome: "stopped" }),
    worker({ type: "turn.finished", outcome: "api_error", message: "500" }),
    worker({ type: "worker.exited", code: null, signal: "SIGKILL", crashed: true }),
    { type: "STOP" },
    { type: "ANSWER", id: "p", answer: { kind: "permission", allowed: true } },
  ),
);

describe("AepTurn under arbitrary interleavings", () => {
  it("never breaks an ordering rule and ends with exactly one done, then its runtime fact", async () => {
    await fc.assert(
      // Each step may yield to the event loop first, so promises (delivery, interrupt) settle at arbitrary points.
      fc.asyncProperty(
        fc.array(fc.tuple(step, fc.boolean()), { maxLength: 40 }),
        fc.boolean(),
        async (steps, deliveryFails) => {
          const violations: string[] = [];
          const wire: ServerEvent[] = [];
          const sequencer = new Sequencer({
            sessionId: "s",
            lastSeq: 0,
            onViolation: (m) => violations.push(m),
            onOverflow: () => violations.push("overflow"),
            onLogged: () => {},
            onReserve: () => {},
          });
          sequencer.attach({ offer: (e) => (wire.push(e), "queued") });
          const actor = createActor(
            aepTurnMachine.provide({
              actors: {
                deliver: fromPromise(async () => {
                  if (deliveryFails) throw new Error("write failed");
                }),
                interrupt: fromPromise(async () => true),
                interaction: aepInteractionMachine.provide({ actions: { sendAnswer: () => {} } }),
              },
              actions: {
                emit: (_, { event, executionId }) => sequencer.emit(event, executionId),
                ack: (_, { executionId, clientMessageId, status }) =>
                  sequencer.emit({
                    type: "input.ack",
                    data: { client_message_id: clientMessageId, execution_id: executionId, status },
                  }),
                settleRuntime: (_, { executionId, end }) =>
                  sequencer.emit({
                    type: end.outcome === "failed" ? "runtime.execution.failed" : "runtime.execution.completed",
                    data: { execution_id: executionId, status: end.outcome === "failed" ? "failed" : "completed" },
                  }),
                // The session forwards the killed process's exit, as the real worker does.
                killWorker: () =>
                  queueMicrotask(() =>
                    actor.send(worker({ type: "worker.exited", code: null, signal: "SIGKILL", crashed: true })),
                  ),
              },
            }),
            { input: { executionId: "x1", clientMessageId: "c1", content: "hi", generation: 1 } },
          );
          sequencer.emit({
            type: "input.ack",
            data: { client_message_id: "c1", execution_id: "x1", status: "accepted" },
          });
          actor.start();
          for (const [s, yieldFirst] of steps) {
            if (yieldFirst) await new Promise((r) => setImmediate(r));
            actor.send(s);
          }
          // Whatever happened, a crash ends what is still open.
          actor.send(worker({ type: "worker.exited", code: null, signal: "SIGKILL", crashed: true }));
          for (let i = 0; i < 5 && actor.getSnapshot().status !== "done"; i++)
            await new Promise((r) => setImmediate(r));
          expect(actor.getSnapshot().status).to.equal("done");
          expect(violations).to.deep.equal([]);
          const kinds = wire.map((e) => e.type);
          expect(kinds.filter((k) => k === "done")).to.have.length(1);
          expect(kinds.at(-1)).to.match(/^runtime\.execution\.(completed|failed)$/);
          expect(kinds.at(-2)).to.equal("done");
          expect(kinds[1]).to.equal("state");
        },
      ),
      { numRuns: 300 },
    );
  });
});
