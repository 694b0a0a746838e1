import { expect } from "chai";
import { SimulatedClock, createActor } from "xstate";
import {
  type WorkerProcessEvent,
  type WorkerProcessExit,
  workerProcessMachine,
} from "../../machines/worker-process.js";

function startMachine(generation = 7) {
  const calls: string[] = [];
  const exits: WorkerProcessExit[] = [];
  const clock = new SimulatedClock();
  const actor = createActor(
    workerProcessMachine.provide({
      actions: {
        spawnProcess: (_, { generation: g }) => void calls.push(`spawn ${g}`),
        endInput: () => void calls.push("eof"),
        killGroup: () => void calls.push("kill"),
        reportExit: (_, exit) => void exits.push(exit),
      },
      delays: { drainGrace: 1_000 },
    }),
    { input: { generation }, clock },
  ).start();
  const send = (...events: WorkerProcessEvent[]) => {
    for (const e of events) actor.send(e);
  };
  const state = () => JSON.stringify(actor.getSnapshot().value).replaceAll('"', "");
  return { actor, calls, exits, clock, send, state };
}

const exited = (code: number | null, signal: string | null = null): WorkerProcessEvent => ({
  type: "EXITED",
  code,
  signal,
});

describe("WorkerProcess machine", () => {
  it("spawns on start, is ready once spawned, busy from the written input to the end of its turn", () => {
    const m = startMachine();
    expect(m.calls).to.deep.equal(["spawn 7"]);
    expect(m.state()).to.equal("spawning");
    m.send({ type: "SPAWNED" });
    expect(m.state()).to.equal("ready");
    m.send({ type: "INPUT_SENT", inputId: "a" });
    expect(m.state()).to.equal("busy");
    m.send({ type: "INPUT_STARTED", inputId: "a" }, { type: "TURN_STARTED" }, { type: "TURN_FINISHED" });
    expect(m.state()).to.equal("ready");
  });

  it("stays busy while a queued input has not started, even after the running turn finished", () => {
    const m = startMachine();
    m.send(
      { type: "SPAWNED" },
      { type: "INPUT_SENT", inputId: "a" },
      { type: "INPUT_STARTED", inputId: "a" },
      { type: "TURN_STARTED" },
    );
    m.send({ type: "INPUT_SENT", inputId: "b" }, { type: "TURN_FINISHED" }, { type: "INPUT_COMPLETED", inputId: "a" });
    expect(m.state()).to.equal("busy");
    m.send({ type: "INPUT_STARTED", inputId: "b" }, { type: "TURN_STARTED" }, { type: "TURN_FINISHED" });
    expect(m.state()).to.equal("ready");
  });

  it("an exit while idle is a normal end, whatever the exit code (1 after an error result)", () => {
    const m = startMachine();
    m.send({ type: "SPAWNED" }, exited(1));
    expect(m.state()).to.equal("exited");
    expect(m.exits).to.deep.equal([{ generation: 7, code: 1, signal: null, crashed: false, cause: "exited" }]);
  });

  it("an exit with a turn open, or with an input not yet settled, is a crash", () => {
    const open = startMachine();
    open.send({ type: "SPAWNED" }, { type: "TURN_STARTED" }, exited(0));
    expect(open.exits).to.deep.equal([
      { generation: 7, code: 0, signal: null, crashed: true, cause: "exit_while_busy" },
    ]);

    // "Session ID … is already in use": exit 1 before the CLI ever took the input.
    const unsettled = startMachine();
    unsettled.send({ type: "SPAWNED" }, { type: "INPUT_SENT", inputId: "a" }, exited(1));
    expect(unsettled.state()).to.equal("crashed");
  });

  it("a signal is a crash even when idle", () => {
    const m = startMachine();
    m.send({ type: "SPAWNED" }, exited(null, "SIGKILL"));
    expect(m.exits).to.deep.equal([{ generation: 7, code: null, signal: "SIGKILL", crashed: true, cause: "signal" }]);
  });

  it("a process that never spawned is crashed", () => {
    const m = startMachine();
    m.send(exited(null));
    expect(m.state()).to.equal("crashed");
    expect(m.exits).to.deep.equal([{ generation: 7, code: null, signal: null, crashed: true, cause: "never_spawned" }]);
  });

  it("close is EOF; the turn may finish and the exit is normal; without an exit the group is killed after the grace", () => {
    const m = startMachine();
    m.send(
      { type: "SPAWNED" },
      { type: "INPUT_SENT", inputId: "a" },
      { type: "INPUT_STARTED", inputId: "a" },
      { type: "TURN_STARTED" },
    );
    m.send({ type: "CLOSE" });
    expect(m.state()).to.equal("{draining:finishing}");
    expect(m.calls).to.deep.equal(["spawn 7", "eof"]);
    m.send({ type: "TURN_FINISHED" }, exited(0));
    expect(m.exits).to.deep.equal([{ generation: 7, code: 0, signal: null, crashed: false, cause: "exited" }]);

    const stuck = startMachine();
    stuck.send({ type: "SPAWNED" }, { type: "CLOSE" });
    stuck.clock.increment(999);
    expect(stuck.calls).to.not.include("kill");
    stuck.clock.increment(1);
    expect(stuck.calls).to.deep.equal(["spawn 7", "eof", "kill"]);
    stuck.send(exited(null, "SIGKILL"));
    expect(stuck.exits).to.deep.equal([
      { generation: 7, code: null, signal: "SIGKILL", crashed: true, cause: "killed_after_grace" },
    ]);
  });

  it("kill signals the group from any live state; events after the end change nothing", () => {
    const m = startMachine();
    m.send({ type: "SPAWNED" }, { type: "KILL" });
    expect(m.calls).to.deep.equal(["spawn 7", "kill"]);
    m.send(exited(null, "SIGKILL"), exited(0), { type: "TURN_STARTED" });
    expect(m.exits).to.have.length(1);
    expect(m.actor.getSnapshot().status).to.equal("done");
  });
});
