// Writes proto/agent/v1/agent.proto and proto/aiserver/v1/aiserver.proto from the wire facts
// (proto/facts/agent-wire.facts.json unless a path is given). Run by hand when the facts change; the .proto
// output is committed and is what `buf generate` reads (test/proto/facts.test.ts checks they agree).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

interface FieldFact {
  name: string;
  number: number;
  type: string;
  label: "optional" | "repeated";
  typeName?: string;
  oneof?: string;
  optional?: boolean;
  /** Where a fact added after the first compilation comes from; written above it as a comment. */
  provenance?: string;
}
interface MessageFact {
  fields: FieldFact[];
  mapEntry?: boolean;
  provenance?: string;
}
export interface Facts {
  messages: Record<string, MessageFact>;
  enums: Record<string, [string, number][]>;
  file: Record<string, string>;
}

export const DEFAULT_FACTS = fileURLToPath(new URL("../proto/facts/agent-wire.facts.json", import.meta.url));
const PACKAGES = ["agent.v1", "aiserver.v1"] as const;

interface Node {
  name: string;
  full: string;
  message?: MessageFact;
  enumValues?: [string, number][];
  children: Map<string, Node>;
}

function packageOf(full: string): string {
  return PACKAGES.find((p) => full.startsWith(`${p}.`)) ?? "google.protobuf";
}

function buildTree(facts: Facts, pkg: string): Node {
  const root: Node = { name: "", full: pkg, children: new Map() };
  const insert = (full: string, set: (n: Node) => void) => {
    const parts = full.slice(pkg.length + 1).split(".");
    let node = root;
    let path = pkg;
    for (const part of parts) {
      path += `.${part}`;
      let child = node.children.get(part);
      if (!child) {
        child = { name: part, full: path, children: new Map() };
        node.children.set(part, child);
      }
      node = child;
    }
    set(node);
  };
  for (const [full, m] of Object.entries(facts.messages))
    if (packageOf(full) === pkg)
      insert(full, (n) => {
        n.message = m;
      });
  for (const [full, v] of Object.entries(facts.enums))
    if (packageOf(full) === pkg)
      insert(full, (n) => {
        n.enumValues = v;
      });
  return root;
}

function typeRef(f: FieldFact): string {
  if (f.type === "message" || f.type === "enum") return `.${f.typeName!}`;
  return f.type;
}

function fieldLine(facts: Facts, f: FieldFact, indent: string): string {
  const entry = f.typeName ? facts.messages[f.typeName] : undefined;
  if (entry?.mapEntry) {
    const [k, v] = [entry.fields.find((x) => x.number === 1)!, entry.fields.find((x) => x.number === 2)!];
    return `${indent}map<${typeRef(k)}, ${typeRef(v)}> ${f.name} = ${f.number};`;
  }
  const label = f.label === "repeated" ? "repeated " : f.optional ? "optional " : "";
  return `${comment(f.provenance, indent)}${indent}${label}${typeRef(f)} ${f.name} = ${f.number};`;
}

/** A provenance note as `//` lines of at most 116 characters, ending in a newline; nothing when there is none. */
function comment(text: string | undefined, indent: string): string {
  if (!text) return "";
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + line.length + word.length + 4 > 116) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.map((l) => `${indent}// ${l}\n`).join("");
}

function renderNode(facts: Facts, node: Node, depth: number): string[] {
  const pad = "  ".repeat(depth);
  const out: string[] = [];
  if (node.enumValues) {
    out.push(`${pad}enum ${node.name} {`);
    for (const [n, v] of node.enumValues) out.push(`${pad}  ${n} = ${v};`);
    out.push(`${pad}}`);
    return out;
  }
  if (node.message?.mapEntry) return out; // synthesised by `map<>` fields
  out.push(`${comment(node.message?.provenance, pad)}${pad}message ${node.name} {`);
  for (const child of [...node.children.values()].sort((a, b) => a.name.localeCompare(b.name)))
    out.push(...renderNode(facts, child, depth + 1));
  const fields = [...(node.message?.fields ?? [])].sort((a, b) => a.number - b.number);
  const oneofs = new Map<string, FieldFact[]>();
  for (const f of fields) {
    if (f.oneof) {
      if (!oneofs.has(f.oneof)) oneofs.set(f.oneof, []);
      oneofs.get(f.oneof)!.push(f);
    } else out.push(fieldLine(facts, f, `${pad}  `));
  }
  for (const [name, members] of oneofs) {
    out.push(`${pad}  oneof ${name} {`);
    for (const f of members) out.push(fieldLine(facts, { ...f, label: "optional", optional: false }, `${pad}    `));
    out.push(`${pad}  }`);
  }
  out.push(`${pad}}`);
  return out;
}

function usesStruct(facts: Facts, pkg: string): boolean {
  return Object.entries(facts.messages).some(
    ([full, m]) => packageOf(full) === pkg && m.fields.some((f) => f.typeName?.startsWith("google.protobuf.")),
  );
}

function renderFile(facts: Facts, pkg: string, imports: string[], service: string[]): string {
  const tree = buildTree(facts, pkg);
  const lines = [
    "// Generated by scripts/facts-to-proto.ts from the observed Cursor wire facts. Field numbers, types,",
    "// oneofs and optional presence are the client's; do not renumber.",
    'syntax = "proto3";',
    "",
    `package ${pkg};`,
    "",
    ...imports.map((i) => `import "${i}";`),
    ...(imports.length ? [""] : []),
  ];
  for (const child of [...tree.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
    lines.push(...renderNode(facts, child, 0), "");
  }
  lines.push(...service);
  return `${lines.join("\n").trimEnd()}\n`;
}

/** The .proto files the facts describe, keyed by their path under proto/. */
export function renderProtoFiles(facts: Facts): Map<string, string> {
  const struct = (pkg: string) => (usesStruct(facts, pkg) ? ["google/protobuf/struct.proto"] : []);
  return new Map([
    [
      "aiserver/v1/aiserver.proto",
      renderFile(facts, "aiserver.v1", struct("aiserver.v1"), [
        "service BidiService {",
        "  rpc BidiAppend(BidiAppendRequest) returns (BidiAppendResponse);",
        "}",
      ]),
    ],
    [
      "agent/v1/agent.proto",
      renderFile(
        facts,
        "agent.v1",
        ["aiserver/v1/aiserver.proto", ...struct("agent.v1")],
        [
          "service AgentService {",
          "  rpc Run(stream AgentClientMessage) returns (stream AgentServerMessage);",
          "  rpc RunSSE(aiserver.v1.BidiRequestId) returns (stream AgentServerMessage);",
          "}",
        ],
      ),
    ],
  ]);
}

export function readFacts(path: string): Facts {
  return JSON.parse(readFileSync(path, "utf8")) as Facts;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const [rel, text] of renderProtoFiles(readFacts(resolve(process.argv[2] ?? DEFAULT_FACTS)))) {
    const path = fileURLToPath(new URL(`../proto/${rel}`, import.meta.url));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
