// The AEP machines on a simulated clock: the 5-minute auto-deny of interactions (and that an old timer never denies a
// newer request with the same id), the 30 s init deadline, the kill fallback of an unacknowledged stop.
import { expect } from "chai";
import { createActor, fromPromise, SimulatedClock } from "xstate";
import type { ServerEvent } from "../../aep/wire/envelope.js";
import { aepConnectionMachine } from "../../machines/aep-connection.js";
import { aepInteractionMachine } from "../../machines/aep-interaction.js";
import { aepTurnMachine } from "../../machines/aep-turn.js";
import type { InteractionAnswer, WorkerEvent } from "../../workers/types.js";

const FIVE_MINUTES = 5 * 60_000;

function turnRig(o: { interruptAcks?: boolean } = {}) {
  const clock = new SimulatedClock();
  const emitted: ServerEvent[] = [];
  const answers: Array<{ id: string; generation: number; answer: InteractionAnswer }> = [];
  const kills: number[] = [];
  let delivered!: () => void;
  const delivery = new Promise<void>((resolve) => (delivered = resolve));
  const machine = aepTurnMachine.provide({
    actors: {
      deliver: fromPromise(() => delivery),
      interrupt: fromPromise(async () => o.interruptAcks ?? true),
      interaction: aepInteractionMachine.provide({ actions: { sendAnswer: (_, p) => answers.push(p) } }),
    },
    actions: {
      emit: (_, { event }) => emitted.push(event),
      killWorker: (_, { generation }) => kills.push(generation),
    },
  });
  const actor = createActor(machine, {
    clock,
    input: { executionId: "x1", clientMessageId: "c1", content: "hi", generation: 3 },
  }).start();
  const worker = (event: WorkerEvent) => actor.send({ type: "WORKER", event });
  return { clock, actor, emitted, answers, kills, worker, delivered, kinds: () => emitted.map((e) => e.type) };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const ask = (id: string, kind: "permission" | "question" | "elicitation" = "permission"): WorkerEvent => ({
  type: "interaction.requested",
  id,
  kind,
  payload: { tool_name: "Bash" },
});

describe("AEP machines (simulated clock)", () => {
  it("an unanswered permission is denied after 5 minutes, to the worker generation that asked", async () => {
    const r = turnRig();
    r.delivered();
    await settle();
    r.worker({ type: "turn.started" });
    r.worker(ask("p1"));
    expect(r.actor.getSnapshot().value).to.deep.equal({ running: "awaitingInteraction" });
    r.clock.increment(FIVE_MINUTES - 1);
    expect(r.answers).to.deep.equal([]);
    r.clock.increment(1);
    expect(r.answers).to.deep.equal([
      {
        id: "p1",
        generation: 3,
        answer: { kind: "permission", allowed: false, reason: "no answer within 5 minutes: denied automatically" },
      },
    ]);
    expect(r.actor.getSnapshot().value).to.deep.equal({ running: "streaming" });
  });

  it("questions are denied like permissions and elicitations declined after 5 minutes", async () => {
    const r = turnRig();
    r.delivered();
    await settle();
    r.worker({ type: "turn.started" });
    r.worker(ask("q1", "question"));
    r.worker(ask("e1", "elicitation"));
    r.clock.increment(FIVE_MINUTES);
    expect(r.answers.map((a) => [a.id, a.answer.kind])).to.deep.equal([
      ["q1", "permission"],
      ["e1", "elicitation"],
    ]);
    expect(r.answers[1]!.answer).to.deep.equal({ kind: "elicitation", action: "decline" });
  });

  it("an answered or withdrawn request is never auto-denied; an old timer never denies a newer request with the same id", async () => {
    const r = turnRig();
    r.delivered();
    await settle();
    r.worker({ type: "turn.started" });
    r.worker(ask("p1"));
    r.clock.increment(FIVE_MINUTES / 2);
    r.actor.send({ type: "ANSWER", id: "p1", answer: { kind: "permission", allowed: true } });
    r.worker(ask("p2"));
    r.worker({ type: "interaction.withdrawn", id: "p2" });
    r.worker(ask("p1")); // the worker reuses the id
    r.clock.increment(FIVE_MINUTES / 2 + 1);
    expect(r.answers.map((a) => a.answer)).to.deep.equal([{ kind: "permission", allowed: true }]);
    r.clock.increment(FIVE_MINUTES / 2);
    expect(r.answers.map((a) => [a.id, (a.answer as { allowed: boolean }).allowed])).to.deep.equal([
      ["p1", true],
      ["p1", false],
    ]);
  });

  it("a stop the worker acknowledges but never honours kills it after the grace; the turn ends stopped", async () => {
    const r = turnRig();
    r.delivered();
    await settle();
    r.worker({ type: "turn.started" });
    r.actor.send({ type: "STOP" });
    await settle();
    expect(r.kills).to.deep.equal([]);
    r.clock.increment(15_000);
    expect(r.kills).to.deep.equal([3]);
    r.worker({ type: "worker.exited", code: null, signal: "SIGKILL", crashed: true });
    expect(r.actor.getSnapshot().value).to.equal("stopped");
    expect(r.emitted.at(-1)).to.deep.equal({ type: "done", data: { success: false, reason: "stopped_by_user" } });
  });

  it("events the worker reports before the delivery is confirmed wait for it, then come in order", async () => {
    const r = turnRig();
    r.worker({ type: "turn.started", inputId: "x1" });
    r.worker({ type: "text.delta", blockId: "b", text: "early" });
    expect(r.kinds()).to.deep.equal(["state"]);
    r.delivered();
    await settle();
    r.worker({ type: "turn.started" });
    expect(r.kinds()).to.deep.equal(["state", "runtime.execution.started", "message.start", "message.delta"]);
  });

  it("a turn past its deadline kills the worker and ends failed TURN_TIMEOUT: error, done, runtime failed", async () => {
    const r = turnRig();
    r.delivered();
    await settle();
    r.worker({ type: "turn.started" });
    r.clock.increment(30 * 60_000 - 1);
    expect(r.kills).to.deep.equal([]);
    r.clock.increment(1);
    expect(r.kills).to.deep.equal([3]);
    expect(r.kinds()).to.deep.equal(["state", "runtime.execution.started", "error", "done"]);
    expect(r.emitted[2]!.data).to.deep.include({ code: "TURN_TIMEOUT", execution_id: "x1" });
    expect(r.actor.getSnapshot().output).to.deep.include({ end: r.actor.getSnapshot().context.end });
    expect(r.actor.getSnapshot().context.end).to.include({ outcome: "failed", cause: "turn_timeout" });
  });

  it("a worker that never begins the delivered turn is killed after 2 minutes: WORKER_TIMEOUT", async () => {
    const r = turnRig();
    r.delivered();
    await settle();
    r.clock.increment(120_000);
    expect(r.kills).to.deep.equal([3]);
    expect(r.emitted.find((e) => e.type === "error")!.data).to.deep.include({ code: "WORKER_TIMEOUT" });
  });

  it("a connection without init within 30 s gets an error and is closed", () => {
    const clock = new SimulatedClock();
    const seen: string[] = [];
    const actor = createActor(
      aepConnectionMachine.provide({
        actions: {
          sendError: (_, p) => seen.push(`error ${p.code}: ${p.message}`),
          close: (_, p) => seen.push(`close ${p.reason}`),
          detach: () => seen.push("detach"),
        },
      }),
      { clock },
    ).start();
    clock.increment(29_999);
    expect(seen).to.deep.equal([]);
    clock.increment(1);
    expect(seen).to.deep.equal([
      "error PROTOCOL_VIOLATION: no init within 30 s of connecting",
      "close init timeout",
      "detach",
    ]);
    expect(actor.getSnapshot().status).to.equal("done");
  });
});
