// Paths generated from the WorkerProcess graph reach every way a process ends (normal exit, a signal, an exit while
// busy, never spawned, killed after the close grace) as distinct paths; each is replayed on a fresh real actor and
// its reported exit is asserted. Every state node and declared transition must be reached by some path.
import { expect } from "chai";
import { createActor } from "xstate";
import { type WorkerExitCause, type WorkerProcessExit, workerProcessMachine } from "../../machines/worker-process.js";
import { takenBy } from "../aep/edge-coverage.js";
import { allOf, coverPaths } from "../aep/path-coverage.js";
import type { Harness } from "../machines/support/replay-graph.js";

interface ProcessLog {
  calls: string[];
  exits: WorkerProcessExit[];
}

const INPUT_EVENTS = new Set(["INPUT_SENT", "INPUT_STARTED", "INPUT_COMPLETED"]);
const taken = new Set<string>();

const harness: Harness<ProcessLog> = {
  name: "worker-process",
  machine: workerProcessMachine,
  maxSimplePaths: 200,
  start(clock) {
    const log: ProcessLog = { calls: [], exits: [] };
    const machine = workerProcessMachine.provide({
      actions: {
        spawnProcess: () => void log.calls.push("spawn"),
        endInput: () => void log.calls.push("eof"),
        killGroup: () => void log.calls.push("kill"),
        reportExit: (_, exit) => void log.exits.push(exit),
      },
    });
    const actor = createActor(machine, {
      input: { generation: 4 },
      clock,
      inspect: takenBy(workerProcessMachine.id, taken),
    }).start();
    return { record: log, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [s.context.turnOpen, s.context.inputs],
  payloads(type) {
    if (INPUT_EVENTS.has(type)) return ["a", "b"].map((inputId) => ({ type, inputId }));
    if (type === "EXITED")
      return [
        { type, code: 0, signal: null },
        { type, code: 1, signal: null },
        { type, code: null, signal: "SIGKILL" },
      ];
    return undefined;
  },
  checkFinal({ record, snapshot }, trace) {
    const s = snapshot();
    expect(record.exits, "the exit is reported exactly once").to.have.length(1);
    const exit = record.exits[0]!;
    expect(s.output).to.deep.equal(exit);
    expect(exit.generation).to.equal(4);
    expect(exit.crashed).to.equal(s.value === "crashed");
    const last = trace.at(-1) as { code?: number | null; signal?: string | null };
    expect({ code: exit.code, signal: exit.signal }).to.deep.equal({ code: last.code, signal: last.signal });
    expect(record.calls.filter((c) => c === "spawn")).to.have.length(1);
    expect(record.calls.filter((c) => c === "eof")).to.have.length(trace.some((e) => e.type === "CLOSE") ? 1 : 0);
    endingChecks[exit.cause](exit, record, trace);
  },
  lateEvents: [{ type: "EXITED", code: 0, signal: null }, { type: "INPUT_SENT", inputId: "c" }, { type: "KILL" }],
};

type Check = (exit: WorkerProcessExit, log: ProcessLog, trace: ReadonlyArray<{ type: string }>) => void;
const endingChecks: Record<WorkerExitCause, Check> = {
  exited: (exit) => expect(exit).to.include({ crashed: false, signal: null }),
  signal: (exit) => expect(exit.signal).to.equal("SIGKILL"),
  exit_while_busy: (exit) => expect(exit).to.include({ crashed: true, signal: null }),
  never_spawned: (_, __, trace) => expect(trace.some((e) => e.type === "SPAWNED")).to.equal(false),
  killed_after_grace: (exit, log, trace) => {
    expect(
      trace.some((e) => e.type === "TIMER"),
      "the close grace ran out",
    ).to.equal(true);
    expect(log.calls.slice(-1)).to.deep.equal(["kill"]);
    expect(exit.signal).to.equal("SIGKILL");
  },
};

describe("WorkerProcess: every way a process ends is a generated path", function () {
  this.timeout(120_000);
  it("each cause is reached and reports the exit it implies", () => {
    const causes = coverPaths(harness, taken, (s) => (s.output as WorkerProcessExit).cause);
    expect([...causes.keys()].sort()).to.deep.equal(allOf(endingChecks).sort());
  });
});
