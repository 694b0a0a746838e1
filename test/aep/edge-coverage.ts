// Transition coverage for the path tests of the AEP and worker-process machines: every transition a machine
// declares (targeted or not, `always` included) has a key, and an inspector records the keys of the transitions an
// actor takes. A test compares the two, so a transition added without a path that takes it fails.
import type { AnyStateMachine, AnyStateNode, InspectionEvent } from "xstate";

interface TransitionLike {
  source: AnyStateNode;
  eventType: string;
}

function keyOf(t: TransitionLike): string {
  const always = t.source.always ?? [];
  const alwaysIndex = always.indexOf(t as never);
  if (alwaysIndex >= 0) return `${t.source.id} always #${alwaysIndex}`;
  const list = t.source.transitions.get(t.eventType) ?? [];
  return `${t.source.id} ${t.eventType} #${list.indexOf(t as never)}`;
}

/** Every transition the machine's state nodes declare. */
export function declaredTransitions(machine: AnyStateMachine): string[] {
  const keys: string[] = [];
  const walk = (n: AnyStateNode): void => {
    for (const list of n.transitions.values()) for (const t of list) keys.push(keyOf(t as TransitionLike));
    for (const t of n.always ?? []) keys.push(keyOf(t as TransitionLike));
    for (const c of Object.values(n.states as Record<string, AnyStateNode>)) walk(c);
  };
  walk(machine.root);
  return keys;
}

/** An `inspect` option that adds the key of every transition the actor (not its children) takes. */
export function takenBy(machineId: string, taken: Set<string>): (e: InspectionEvent) => void {
  return (e) => {
    if (e.type !== "@xstate.microstep") return;
    for (const t of e._transitions as unknown as TransitionLike[])
      if (t.source.machine.id === machineId) taken.add(keyOf(t));
  };
}
