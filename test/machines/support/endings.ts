// Static check over a machine definition: from every state node some chain of declared transitions reaches one of
// the machine's top-level final states (its endings). A state added without a way out fails it.
import type { AnyStateMachine, AnyStateNode } from "xstate";

const childrenOf = (n: AnyStateNode): AnyStateNode[] => Object.values(n.states as Record<string, AnyStateNode>);

function ancestorsAndSelf(n: AnyStateNode): AnyStateNode[] {
  const chain: AnyStateNode[] = [];
  for (let x: AnyStateNode | undefined = n; x; x = x.parent) chain.push(x);
  return chain;
}

/** Where a state node can go next: its own and its ancestors' transition targets, and the children it enters. */
function successors(n: AnyStateNode): AnyStateNode[] {
  const next: AnyStateNode[] = [];
  for (const a of ancestorsAndSelf(n)) {
    for (const transitions of a.transitions.values()) for (const t of transitions) next.push(...(t.target ?? []));
    for (const t of a.always ?? []) next.push(...(t.target ?? []));
  }
  if (n.type === "parallel") next.push(...childrenOf(n));
  if (n.type === "compound" && n.initial?.target) next.push(...n.initial.target);
  return next;
}

/** Ids of the state nodes from which no declared transition chain reaches a top-level final state. */
export function statesWithoutEnding(machine: AnyStateMachine): string[] {
  const all: AnyStateNode[] = [];
  const walk = (n: AnyStateNode): void => {
    for (const c of childrenOf(n)) {
      all.push(c);
      walk(c);
    }
  };
  walk(machine.root);
  const endings = childrenOf(machine.root).filter((n) => n.type === "final");
  const reaches = new Set<AnyStateNode>(endings);
  for (let grew = true; grew; ) {
    grew = false;
    for (const n of all) {
      if (reaches.has(n)) continue;
      // A compound or parallel node ends once what it enters ends; a leaf by its own transitions.
      if (successors(n).some((s) => reaches.has(s))) {
        reaches.add(n);
        grew = true;
      }
    }
  }
  return all.filter((n) => !reaches.has(n)).map((n) => n.id);
}
