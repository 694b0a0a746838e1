// Reads an XState machine's state-node tree into a small neutral graph, then prints it as Mermaid stateDiagram-v2 or
// Graphviz DOT. The diagrams therefore come from the machine definitions themselves, never from a hand-drawn copy.
import type { AnyStateMachine, AnyStateNode } from "xstate";

interface Edge {
  from: string;
  to: string;
  label: string;
}

interface Node {
  id: string;
  key: string;
  type: string;
  children: Node[];
  initial: string | undefined;
}

const safeId = (id: string) => id.replace(/[^A-Za-z0-9_]/g, "_");

function eventLabel(eventType: string, machineId: string): string {
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after) return `after ${after[1]}`;
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) return `${actor[1]} ${actor[2]!.replace(/^0\./, "").replace(`${machineId}.`, "")}`;
  return eventType;
}

/** A guard's name; fixed parameters that are plain values (a cause, a kind) are part of it: `[endedBy backlog]`. */
function guardLabel(guard: unknown): string {
  if (!guard) return "";
  if (typeof guard === "string") return ` [${guard}]`;
  if (typeof guard === "object" && guard !== null && "type" in guard && typeof guard.type === "string") {
    const params = "params" in guard && typeof guard.params === "object" && guard.params ? guard.params : {};
    const fixed = Object.values(params).filter((v) => typeof v === "string" || typeof v === "number");
    return ` [${[guard.type, ...fixed].join(" ")}]`;
  }
  return " [guarded]";
}

function readNode(node: AnyStateNode): Node {
  const children = Object.values(node.states as Record<string, AnyStateNode>).map(readNode);
  const initialTarget = node.type === "compound" ? node.initial?.target?.[0] : undefined;
  return {
    id: safeId(node.id),
    key: node.key,
    type: node.type,
    children,
    initial: initialTarget ? safeId(initialTarget.id) : undefined,
  };
}

function readEdges(node: AnyStateNode, machineId: string, out: Edge[]): Edge[] {
  const seen = new Set<string>();
  const add = (
    eventType: string,
    transitions: ReadonlyArray<{ target?: ReadonlyArray<AnyStateNode>; guard?: unknown }>,
  ) => {
    for (const t of transitions) {
      for (const target of t.target ?? []) {
        const edge = {
          from: safeId(node.id),
          to: safeId(target.id),
          label: `${eventLabel(eventType, machineId)}${guardLabel(t.guard)}`,
        };
        const key = `${edge.from}>${edge.to}>${edge.label}`;
        if (!seen.has(key)) {
          out.push(edge);
          seen.add(key);
        }
      }
    }
  };
  for (const [eventType, transitions] of node.transitions) add(eventType, transitions);
  if (node.always) add("always", node.always);
  for (const child of Object.values(node.states as Record<string, AnyStateNode>)) readEdges(child, machineId, out);
  return out;
}

/** Transitions declared on the machine itself apply in every state: drawn from one "any state" node. */
const ANY = "any_state";
const fromRoot = (machine: AnyStateMachine, edges: Edge[]) =>
  edges.map((e) => (e.from === safeId(machine.root.id) ? { ...e, from: ANY } : e));

export function toMermaid(machine: AnyStateMachine): string {
  const root = readNode(machine.root);
  const edges = fromRoot(machine, readEdges(machine.root, machine.id, []));
  const lines = ["stateDiagram-v2"];
  const emit = (n: Node, depth: number) => {
    const pad = "  ".repeat(depth);
    if (n.children.length === 0) {
      lines.push(`${pad}state "${n.key}" as ${n.id}`);
      if (n.type === "final") lines.push(`${pad}${n.id} --> [*]`);
      return;
    }
    lines.push(`${pad}state "${n.key}" as ${n.id} {`);
    if (n.initial) lines.push(`${pad}  [*] --> ${n.initial}`);
    n.children.forEach((c, i) => {
      if (n.type === "parallel" && i > 0) lines.push(`${pad}  --`);
      emit(c, depth + 1);
    });
    lines.push(`${pad}}`);
  };
  if (root.initial) lines.push(`  [*] --> ${root.initial}`);
  for (const child of root.children) emit(child, 1);
  if (edges.some((e) => e.from === ANY)) lines.push(`  state "any state" as ${ANY}`);
  for (const e of edges) lines.push(`  ${e.from} --> ${e.to} : ${e.label.replace(/:/g, " ")}`);
  return `${lines.join("\n")}\n`;
}

export function toDot(machine: AnyStateMachine): string {
  const root = readNode(machine.root);
  const edges = fromRoot(machine, readEdges(machine.root, machine.id, []));
  const leafOf = new Map<string, string>();
  const lines = [
    `digraph ${safeId(machine.id)} {`,
    '  graph [compound=true, rankdir=LR, fontname="Helvetica", fontsize=11];',
    '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=10];',
    '  edge [fontname="Helvetica", fontsize=9];',
  ];
  const firstLeaf = (n: Node): string =>
    n.children.length === 0 ? n.id : firstLeaf(n.children.find((c) => c.id === n.initial) ?? n.children[0]!);
  const emit = (n: Node, depth: number) => {
    const pad = "  ".repeat(depth);
    leafOf.set(n.id, firstLeaf(n));
    if (n.children.length === 0) {
      const shape = n.type === "final" ? ", peripheries=2" : "";
      lines.push(`${pad}${n.id} [label="${n.key}"${shape}];`);
      return;
    }
    lines.push(
      `${pad}subgraph cluster_${n.id} {`,
      `${pad}  label="${n.key}${n.type === "parallel" ? " (parallel)" : ""}"; style="rounded,dashed";`,
    );
    for (const c of n.children) emit(c, depth + 1);
    lines.push(`${pad}}`);
  };
  lines.push('  __start [shape=point, label=""];');
  for (const child of root.children) emit(child, 1);
  if (root.initial) lines.push(`  __start -> ${leafOf.get(root.initial)};`);
  if (edges.some((e) => e.from === ANY)) {
    lines.push(`  ${ANY} [label="any state", shape=plaintext];`);
    leafOf.set(ANY, ANY);
  }
  const isCluster = (id: string) => leafOf.get(id) !== id;
  for (const e of edges) {
    const attrs = [`label="${e.label.replace(/"/g, "'")}"`];
    if (isCluster(e.from)) attrs.push(`ltail=cluster_${e.from}`);
    if (isCluster(e.to) && e.to !== e.from) attrs.push(`lhead=cluster_${e.to}`);
    lines.push(`  ${leafOf.get(e.from)} -> ${leafOf.get(e.to)} [${attrs.join(", ")}];`);
  }
  lines.push("}");
  return `${lines.join("\n")}\n`;
}
