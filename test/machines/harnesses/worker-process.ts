// Harness for WorkerProcess: the real machine with its process side effects recorded (spawn, EOF, kill, exit
// report). Inputs use two ids so that overlapping inputs and folded (injected) ones are both on the graph.
import { expect } from "chai";
import { createActor } from "xstate";
import { workerProcessMachine, type WorkerProcessExit } from "../../../machines/worker-process.js";
import type { Harness } from "../support/replay-graph.js";

interface ProcessRecord {
  spawned: number;
  endInput: number;
  kills: number;
  exits: WorkerProcessExit[];
}

const INPUT_EVENTS = new Set(["INPUT_SENT", "INPUT_STARTED", "INPUT_COMPLETED"]);

export const workerProcessHarness: Harness<ProcessRecord> = {
  name: "worker-process",
  machine: workerProcessMachine,
  maxSimplePaths: 300,
  start(clock) {
    const record: ProcessRecord = { spawned: 0, endInput: 0, kills: 0, exits: [] };
    const machine = workerProcessMachine.provide({
      actions: {
        spawnProcess: () => void record.spawned++,
        endInput: () => void record.endInput++,
        killGroup: () => void record.kills++,
        reportExit: (_, exit) => void record.exits.push(exit),
      },
    });
    const actor = createActor(machine, { input: { generation: 3 }, clock }).start();
    return { record, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [s.context.turnOpen, s.context.inputs],
  payloads(type) {
    if (INPUT_EVENTS.has(type)) return ["a", "b"].map((inputId) => ({ type, inputId }));
    if (type === "EXITED") {
      return [
        { type, code: 0, signal: null },
        { type, code: 1, signal: null },
        { type, code: null, signal: "SIGKILL" },
      ];
    }
    return undefined;
  },
  checkFinal({ record, snapshot }, trace) {
    const s = snapshot();
    // The exit is decided and reported exactly once, for this generation, and agrees with the final state.
    expect(record.exits).to.have.length(1);
    const [exit] = record.exits;
    expect(exit!.generation).to.equal(3);
    expect(exit!.crashed).to.equal(s.value === "crashed");
    const last = trace.at(-1)!;
    if (last.type === "EXITED" && last.signal !== null)
      expect(exit!.crashed, "a signal is always a crash").to.equal(true);
    // A clean exit happens only with no turn open and every input settled.
    if (!exit!.crashed) expect(s.context.turnOpen || s.context.inputs.length > 0).to.equal(false);
    expect(record.spawned).to.equal(1);
    // EOF is written at most once, and only on the way out through draining.
    expect(record.endInput).to.equal(trace.some((e) => e.type === "CLOSE") ? 1 : 0);
  },
  lateEvents: [
    { type: "EXITED", code: 0, signal: null },
    { type: "INPUT_SENT", inputId: "c" },
    { type: "CLOSE" },
    { type: "KILL" },
  ],
};
