// Model-based tests generated from the machine graphs (issue 3): for each lifecycle machine, shortest and simple
// paths found by @xstate/graph over the real machine are executed step by step against a fresh real actor, and
// every path that reaches a final state is checked against the termination invariants. The suite prints how many
// paths ran per machine.
import { expect } from "chai";
import type { Harness } from "./support/replay-graph.js";
import { declaredTransitions, executePath, generatePaths, stateNodeIds } from "./support/replay-graph.js";
import { checkpointHarness, pendingExecHarness } from "./harnesses/exec-and-checkpoint.js";
import { requestStreamHarness } from "./harnesses/request-stream.js";
import { modelCallHarness } from "./harnesses/model-call.js";
import { toolRoundHarnesses } from "./harnesses/tool-round.js";
import { toolCallHarnesses } from "./harnesses/tool-call.js";
import { runEndsReached, runHarness } from "./harnesses/run.js";
import { cancelCauses, failureCauses, failureCodes } from "../../machines/run-ends.js";
import { createActor, createMachine } from "xstate";
import { workerProcessHarness } from "./harnesses/worker-process.js";

const harnesses: Harness<any>[] = [
  requestStreamHarness,
  runHarness,
  modelCallHarness,
  pendingExecHarness,
  checkpointHarness,
  workerProcessHarness,
];

describe("lifecycle machines: paths generated from their graphs", function () {
  // The Run graph (with its measuring and compacting states) takes about a minute on a loaded machine.
  this.timeout(180_000);
  for (const h of harnesses) {
    it(`${h.name}: every generated path replays on the real machine and every ending keeps the invariants`, () => {
      const graph = generatePaths(h);
      expect(graph.deadEnds, "states from which no supplied event sequence reaches an ending").to.deep.equal([]);
      const visited = new Set<string>();
      const taken = new Set<string>();
      let finals = 0;
      for (const path of [...graph.shortest, ...graph.transitions, ...graph.simple])
        if (executePath(h, path, visited, taken)) finals++;
      const unvisited = stateNodeIds(h.machine).filter((id) => !visited.has(id));
      expect(unvisited, "state nodes no generated path visits").to.deep.equal([]);
      if (h.coversEveryTransition) {
        const untaken = declaredTransitions(h.machine).filter((k) => !taken.has(k));
        expect(untaken, "declared transitions no generated path takes").to.deep.equal([]);
      }
      console.log(
        `      ${h.name}: ${graph.vertices} states, ${graph.shortest.length} shortest + ${graph.transitions.length} transition + ${graph.simple.length} simple paths, ${finals} ending in a final state`,
      );
      expect(finals).to.be.greaterThan(0);
    });
  }
});

describe("lifecycle machines: machines reached through several harness variants", function () {
  this.timeout(120_000);
  const families: Array<[string, Harness<any>[]]> = [
    ["tool-round", toolRoundHarnesses],
    ["tool-call", toolCallHarnesses],
  ];
  for (const [name, variants] of families) {
    it(`${name}: the variants together visit every state and take every transition`, () => {
      const visited = new Set<string>();
      const taken = new Set<string>();
      for (const h of variants) {
        const graph = generatePaths(h);
        expect(graph.deadEnds, `${h.name}: states from which no ending is reachable`).to.deep.equal([]);
        let finals = 0;
        for (const path of [...graph.shortest, ...graph.transitions, ...graph.simple])
          if (executePath(h, path, visited, taken)) finals++;
        console.log(`      ${h.name}: ${graph.vertices} states, ${finals} paths ending in a final state`);
        expect(finals).to.be.greaterThan(0);
      }
      const machine = variants[0]!.machine;
      expect(stateNodeIds(machine).filter((id) => !visited.has(id))).to.deep.equal([]);
      expect(declaredTransitions(machine).filter((k) => !taken.has(k))).to.deep.equal([]);
    });
  }
});

describe("lifecycle machines: every ending cause is a path of its own", function () {
  this.timeout(180_000);

  it("run: each failure and cancel cause ends the run as its own path, with its code", () => {
    runEndsReached.clear();
    const graph = generatePaths(runHarness);
    for (const path of [...graph.shortest, ...graph.transitions]) executePath(runHarness, path, new Set());
    expect([...runEndsReached.keys()].sort()).to.deep.equal(["succeeded", ...failureCauses, ...cancelCauses].sort());
    for (const cause of failureCauses)
      expect(runEndsReached.get(cause)).to.include({ kind: "failed", cause, code: failureCodes[cause] });
    for (const cause of cancelCauses) expect(runEndsReached.get(cause)).to.include({ kind: "canceled", cause });
  });

  it("the transition check finds an edge no path takes", () => {
    const machine = createMachine({
      id: "m",
      initial: "a",
      states: { a: { on: { GO: "b", NEVER: "b" } }, b: { type: "final" } },
    });
    const harness = {
      name: "m",
      machine,
      maxSimplePaths: 10,
      start: (clock: never, inspect?: never) => {
        const actor = createActor(machine, { clock, inspect }).start();
        return { record: null, send: (e: never) => actor.send(e), snapshot: () => actor.getSnapshot() };
      },
      payloads: (type: string) => (type === "NEVER" ? [] : undefined),
      checkFinal: () => {},
    } as unknown as Harness<null>;
    const taken = new Set<string>();
    for (const p of generatePaths(harness).transitions) executePath(harness, p, new Set(), taken);
    expect(declaredTransitions(machine).filter((k) => !taken.has(k))).to.deep.equal(["m.a on NEVER #0"]);
  });
});
