// Model-based tests generated from the machine graphs (issue 3): for each lifecycle machine, shortest and simple
// paths found by @xstate/graph over the real machine are executed step by step against a fresh real actor, and
// every path that reaches a final state is checked against the termination invariants. The suite prints how many
// paths ran per machine.
import { expect } from "chai";
import type { Harness } from "./support/replay-graph.js";
import { executePath, generatePaths, stateNodeIds } from "./support/replay-graph.js";
import { checkpointHarness, pendingExecHarness } from "./harnesses/exec-and-checkpoint.js";
import { requestStreamHarness } from "./harnesses/request-stream.js";
import { modelCallHarness } from "./harnesses/model-call.js";
import { toolRoundHarness } from "./harnesses/tool-round.js";
import { runHarness } from "./harnesses/run.js";
import { workerProcessHarness } from "./harnesses/worker-process.js";

const harnesses: Harness<any>[] = [
  requestStreamHarness,
  runHarness,
  modelCallHarness,
  toolRoundHarness,
  pendingExecHarness,
  checkpointHarness,
  workerProcessHarness,
];

describe("lifecycle machines: paths generated from their graphs", function () {
  this.timeout(60_000);
  for (const h of harnesses) {
    it(`${h.name}: every generated path replays on the real machine and every ending keeps the invariants`, () => {
      const graph = generatePaths(h);
      expect(graph.deadEnds, "states from which no supplied event sequence reaches an ending").to.deep.equal([]);
      const visited = new Set<string>();
      let finals = 0;
      for (const path of [...graph.shortest, ...graph.transitions, ...graph.simple])
        if (executePath(h, path, visited)) finals++;
      const unvisited = stateNodeIds(h.machine).filter((id) => !visited.has(id));
      expect(unvisited, "state nodes no generated path visits").to.deep.equal([]);
      console.log(
        `      ${h.name}: ${graph.vertices} states, ${graph.shortest.length} shortest + ${graph.transitions.length} transition + ${graph.simple.length} simple paths, ${finals} ending in a final state`,
      );
      expect(finals).to.be.greaterThan(0);
    });
  }
});
