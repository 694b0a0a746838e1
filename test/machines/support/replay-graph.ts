// Model-based testing of the lifecycle machines from their graphs (issue 3).
// @xstate/graph's getShortestPaths / getAdjacencyMap walk a "replay logic": each vertex is the event trace that
// reached it, and each transition replays that trace plus one event on a fresh *real* actor (real actions, fake
// side-effect actors that never settle on their own, a SimulatedClock for `after` timers). The paths found are then
// executed step by step on yet another fresh actor, checking the state after every step and, at the end of every
// path that reaches a final state, the machine's termination invariants.
import { getAdjacencyMap, getShortestPaths } from "@xstate/graph";
import type { AnyMachineSnapshot, AnyStateMachine, AnyStateNode, InspectionEvent } from "xstate";
import { SimulatedClock } from "xstate";

/** An `after` timer firing: the replay advances the SimulatedClock by `ms`. */
export type TimerEvent = { type: "TIMER"; ms: number; delay: string };

/** An event the harness supplies, payload included. */
export type SuppliedEvent = { type: string; [field: string]: unknown };

/** One live instance of the machine under test, with whatever its fakes recorded. */
export interface Instance<R> {
  send(event: SuppliedEvent): void;
  snapshot(): AnyMachineSnapshot;
  record: R;
}

export interface Harness<R> {
  name: string;
  /** The production machine (its definition decides which events each state can take). */
  machine: AnyStateMachine;
  /** `inspect`, when given, is passed to createActor: it lets the paths report which transitions they took. */
  start(clock: SimulatedClock, inspect?: (event: InspectionEvent) => void): Instance<R>;
  /** Every declared transition must be taken by some generated path (see `uncoveredTransitions`). */
  coversEveryTransition?: boolean;
  /** Payload variants for an event type the active states accept; undefined ⇒ the bare `{ type }`. */
  payloads(eventType: string, snapshot: AnyMachineSnapshot, record: R): SuppliedEvent[] | undefined;
  /**
   * Events for the actors a machine spawns, which its own state nodes do not declare (a ToolCall's commit inside a
   * ToolRound, say); `send` delivers them where they belong.
   */
  extraEvents?(snapshot: AnyMachineSnapshot, record: R): SuppliedEvent[];
  /** What distinguishes two vertices beyond the state value (keep it small: it bounds the graph). */
  summary?(snapshot: AnyMachineSnapshot, record: R): unknown;
  /** Termination invariants, asserted at the end of every path to a final state. */
  checkFinal(instance: Instance<R>, trace: readonly SuppliedEvent[]): void;
  /** Events the harness sends after the end to prove they change nothing (late provider/KV/Exec events). */
  lateEvents?: SuppliedEvent[];
  /** Bound for the simple-path enumeration (they explode with parallel states and loops). */
  maxSimplePaths: number;
}

interface Vertex {
  trace: SuppliedEvent[];
  key: string;
  snapshot: AnyMachineSnapshot;
  events: SuppliedEvent[];
}

export const stringify = (v: unknown): string =>
  JSON.stringify(v, (_, x: unknown) =>
    typeof x === "bigint"
      ? `${x}n`
      : x instanceof Uint8Array
        ? Buffer.from(x).toString("hex")
        : x instanceof Map
          ? [...x.entries()]
          : x,
  );

/** Sends one event to the instance; a timer advances the simulated clock instead. */
export function apply<R>(instance: Instance<R>, clock: SimulatedClock, event: SuppliedEvent): void {
  if (event.type === "TIMER") clock.increment(event.ms as TimerEvent["ms"]);
  else instance.send(event);
}

function replay<R>(h: Harness<R>, trace: readonly SuppliedEvent[]): { instance: Instance<R>; clock: SimulatedClock } {
  const clock = new SimulatedClock();
  const instance = h.start(clock);
  for (const e of trace) apply(instance, clock, e);
  return { instance, clock };
}

/** Every event type the active state nodes (and their ancestors) declare a transition for. */
function acceptedEventTypes(snapshot: AnyMachineSnapshot): string[] {
  const types = new Set<string>();
  for (const node of snapshot._nodes as AnyStateNode[]) for (const type of node.transitions.keys()) types.add(type);
  return [...types];
}

function delayMs(machine: AnyStateMachine, delay: string): number {
  const configured = (machine.implementations.delays as Record<string, unknown>)[delay];
  const ms = typeof configured === "number" ? configured : Number(delay);
  if (!Number.isFinite(ms)) throw new Error(`${machine.id}: delay ${delay} has no fixed length`);
  return ms;
}

function eventsFor<R>(h: Harness<R>, snapshot: AnyMachineSnapshot, record: R): SuppliedEvent[] {
  if (snapshot.status !== "active") return [];
  const events: SuppliedEvent[] = [];
  for (const type of acceptedEventTypes(snapshot)) {
    const after = /^xstate\.after\.([^.]+)\./.exec(type);
    if (after) {
      const timer: TimerEvent = { type: "TIMER", ms: delayMs(h.machine, after[1]!), delay: after[1]! };
      events.push(timer);
      continue;
    }
    if (type.startsWith("xstate.done.state.")) continue; // raised by the machine itself
    events.push(...(h.payloads(type, snapshot, record) ?? [{ type }]));
  }
  events.push(...(h.extraEvents?.(snapshot, record) ?? []));
  return events;
}

function vertex<R>(h: Harness<R>, trace: SuppliedEvent[]): Vertex {
  const { instance } = replay(h, trace);
  const snapshot = instance.snapshot();
  const key = stringify([snapshot.value, snapshot.status, h.summary?.(snapshot, instance.record) ?? null]);
  return { trace, key, snapshot, events: eventsFor(h, snapshot, instance.record) };
}

/** The machine as logic @xstate/graph can traverse: snapshots are replayed traces (memoised per trace). */
function replayLogic<R>(h: Harness<R>) {
  const cache = new Map<string, Vertex>();
  const at = (trace: SuppliedEvent[]) => {
    const k = stringify(trace);
    let v = cache.get(k);
    if (!v) cache.set(k, (v = vertex(h, trace)));
    return v;
  };
  return {
    config: {},
    transition: (v: Vertex, event: SuppliedEvent) => at([...v.trace, event]),
    getInitialSnapshot: () => at([]),
    getPersistedSnapshot: (v: Vertex) => v,
  };
}

export interface GeneratedPath {
  kind: "shortest" | "transition" | "simple";
  /** The vertex the path ends in. */
  to: string;
  events: SuppliedEvent[];
  /** The state (value + status) expected after each event. */
  expected: Array<{ value: unknown; status: string }>;
}

export interface GeneratedGraph {
  shortest: GeneratedPath[];
  transitions: GeneratedPath[];
  simple: GeneratedPath[];
  /** Distinct vertices (state value + harness summary) the real machine reached. */
  vertices: number;
  /** Vertices from which no sequence of supplied events reaches a final state. */
  deadEnds: string[];
}

export function generatePaths<R>(h: Harness<R>): GeneratedGraph {
  const logic = replayLogic(h) as never;
  const options = {
    events: (v: Vertex) => v.events,
    serializeState: (v: Vertex) => v.key,
    serializeEvent: (e: SuppliedEvent) => stringify(e),
  } as never;
  const toGenerated =
    (kind: GeneratedPath["kind"]) =>
    (p: { steps: Array<{ state: Vertex; event: SuppliedEvent }> }): GeneratedPath => ({
      kind,
      to: p.steps.at(-1)!.state.key,
      events: p.steps.slice(1).map((s) => s.event),
      expected: p.steps.slice(1).map((s) => ({ value: s.state.snapshot.value, status: s.state.snapshot.status })),
    });
  const shortest = getShortestPaths(logic, options).map(toGenerated("shortest"));
  const adjacency = getAdjacencyMap(logic, options) as unknown as Adjacency;
  const initial = shortest.find((p) => p.events.length === 0)!.to;
  return {
    shortest,
    transitions: transitionPaths(shortest, adjacency),
    simple: simplePathsToEndings(adjacency, initial, h.maxSimplePaths),
    vertices: Object.keys(adjacency).length,
    deadEnds: deadEnds(adjacency),
  };
}

type Adjacency = Record<
  string,
  { state: Vertex; transitions: Record<string, { event: SuppliedEvent; state: Vertex }> }
>;

/** Transition coverage: for every edge of the explored graph, the shortest path to its source plus that edge. */
function transitionPaths(shortest: GeneratedPath[], adjacency: Adjacency): GeneratedPath[] {
  const toVertex = new Map<string, GeneratedPath>();
  for (const p of shortest) toVertex.set(p.to, p);
  return Object.entries(adjacency).flatMap(([key, a]) => {
    const head = toVertex.get(key)!;
    return Object.values(a.transitions).map((t) => ({
      kind: "transition" as const,
      to: t.state.key,
      events: [...head.events, t.event],
      expected: [...head.expected, { value: t.state.snapshot.value, status: t.state.snapshot.status }],
    }));
  });
}

/**
 * Simple paths (no vertex twice) from the initial vertex to every final vertex, depth first, at most `max` of them.
 * @xstate/graph's getSimplePaths enumerates every simple path to every vertex before anything can be capped, which
 * does not finish on these graphs, so the same walk runs here over its adjacency map, bounded.
 */
function simplePathsToEndings(adjacency: Adjacency, initial: string, max: number): GeneratedPath[] {
  const paths: GeneratedPath[] = [];
  const onPath = new Set<string>([initial]);
  const events: SuppliedEvent[] = [];
  const expected: GeneratedPath["expected"] = [];
  const walk = (key: string): void => {
    for (const t of Object.values(adjacency[key]!.transitions)) {
      if (paths.length >= max) return;
      const next = t.state.key;
      if (onPath.has(next)) continue;
      events.push(t.event);
      expected.push({ value: t.state.snapshot.value, status: t.state.snapshot.status });
      if (t.state.snapshot.status === "done")
        paths.push({ kind: "simple", to: next, events: [...events], expected: [...expected] });
      else onPath.add(next), walk(next), onPath.delete(next);
      events.pop();
      expected.pop();
    }
  };
  walk(initial);
  return paths;
}

/** Reverse reachability from the final vertices over the explored graph. */
function deadEnds(adjacency: Adjacency): string[] {
  const reaches = new Set(
    Object.entries(adjacency)
      .filter(([, a]) => a.state.snapshot.status === "done")
      .map(([k]) => k),
  );
  for (let grew = true; grew; ) {
    grew = false;
    for (const [k, a] of Object.entries(adjacency)) {
      if (reaches.has(k)) continue;
      if (Object.values(a.transitions).some((t) => reaches.has(t.state.key))) reaches.add(k), (grew = true);
    }
  }
  return Object.keys(adjacency).filter((k) => !reaches.has(k));
}

/**
 * Executes one path on a fresh actor, adding the state nodes it visits to `visited`; returns whether it ended in a
 * final state (the invariants are checked then).
 */
export function executePath<R>(
  h: Harness<R>,
  path: GeneratedPath,
  visited: Set<string>,
  taken: Set<string> = new Set(),
): boolean {
  const clock = new SimulatedClock();
  const instance = h.start(clock, (e) => {
    if (e.type !== "@xstate.microstep") return;
    for (const t of e._transitions as unknown as Transition[]) {
      if (t.source.machine.id !== h.machine.id) continue;
      taken.add(transitionKey(t));
      // A transient (decision) state is left in the same microstep it is entered: it is visited all the same.
      visited.add(t.source.id);
    }
  });
  const visit = () => {
    for (const n of instance.snapshot()._nodes as AnyStateNode[]) visited.add(n.id);
  };
  visit();
  path.events.forEach((event, i) => {
    apply(instance, clock, event);
    visit();
    const s = instance.snapshot();
    const want = path.expected[i]!;
    if (stringify([s.value, s.status]) !== stringify([want.value, want.status])) {
      throw new Error(
        `${h.name}: after step ${i + 1} (${event.type}) expected ${stringify(want)}, got ${stringify([s.value, s.status])}`,
      );
    }
  });
  if (instance.snapshot().status !== "done") return false;
  h.checkFinal(instance, path.events);
  const before = stringify(instance.record);
  for (const late of h.lateEvents ?? []) apply(instance, clock, late);
  if (stringify(instance.record) !== before)
    throw new Error(`${h.name}: an event after the end changed what the machine did`);
  return true;
}

/** Every state node of the machine (root excluded), by id. */
export function stateNodeIds(machine: AnyStateMachine): string[] {
  const ids: string[] = [];
  const walk = (n: AnyStateNode) => {
    for (const c of Object.values(n.states as Record<string, AnyStateNode>)) ids.push(c.id), walk(c);
  };
  walk(machine.root);
  return ids;
}

interface Transition {
  source: AnyStateNode;
  eventType: string;
}

/** A declared transition: its source, its event and its place among that event's guarded alternatives. */
function transitionKey(t: Transition): string {
  const list = (t.eventType === "" ? t.source.always : t.source.transitions.get(t.eventType)) ?? [];
  return `${t.source.id} on ${t.eventType || "always"} #${list.indexOf(t as never)}`;
}

/** Every transition the machine declares (done/error/after events included), keyed as `transitionKey` keys them. */
export function declaredTransitions(machine: AnyStateMachine): string[] {
  const keys: string[] = [];
  const walk = (n: AnyStateNode) => {
    const lists: Array<[string, readonly unknown[]]> = [...n.transitions, ["always", n.always ?? []]];
    for (const [type, list] of lists) for (let i = 0; i < list.length; i++) keys.push(`${n.id} on ${type} #${i}`);
    for (const c of Object.values(n.states as Record<string, AnyStateNode>)) walk(c);
  };
  walk(machine.root);
  return keys;
}
