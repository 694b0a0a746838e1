// Runs the paths generated from a machine's graph (test/machines/support/replay-graph.ts) and checks coverage: every
// state node visited, every declared transition taken, and — through the harness's own checkFinal — the ending of
// every path that reaches a final state. Returns how many paths ended with each cause.
import { expect } from "chai";
import type { AnyMachineSnapshot } from "xstate";
import { executePath, generatePaths, stateNodeIds, type Harness } from "../machines/support/replay-graph.js";
import { declaredTransitions } from "./edge-coverage.js";

export function coverPaths<R>(
  h: Harness<R>,
  taken: Set<string>,
  causeOf: (s: AnyMachineSnapshot) => string,
): Map<string, number> {
  const graph = generatePaths(h);
  expect(graph.deadEnds, "states from which no supplied event sequence reaches an ending").to.deep.equal([]);
  taken.clear();
  const causes = new Map<string, number>();
  const counting: Harness<R> = {
    ...h,
    checkFinal(instance, trace) {
      h.checkFinal(instance, trace);
      const cause = causeOf(instance.snapshot());
      causes.set(cause, (causes.get(cause) ?? 0) + 1);
    },
  };
  const visited = new Set<string>();
  for (const path of [...graph.shortest, ...graph.transitions, ...graph.simple]) executePath(counting, path, visited);
  expect(
    stateNodeIds(h.machine).filter((id) => !visited.has(id)),
    "state nodes no path visits",
  ).to.deep.equal([]);
  const untaken = declaredTransitions(h.machine).filter((k) => !taken.has(k));
  expect(untaken, "transitions no generated path takes").to.deep.equal([]);
  return causes;
}

/** The keys of a Record over a closed union: the compiler makes a cause added to the type appear here. */
export const allOf = <T extends string>(members: Record<T, unknown>): T[] => Object.keys(members) as T[];
