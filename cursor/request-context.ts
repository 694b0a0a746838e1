// The request context a run works with (docs/protocol/cursor-run.md §2.6): the action's inline `request_context`,
// or, when the client sends its large parts by reference (`request_context_parts`), the small inline
// `dynamic_context` plus four blobs — rules, skills, subagents, MCP — each decoded as its own part message. The
// caller fetched the blobs (SHA-256 checked); here each is checked against its declared byte length and decoded.
import { clone, create, type DescMessage, fromBinary, isFieldSet, type MessageShape } from "@bufbuild/protobuf";
import {
  type McpInstructions,
  type McpToolDefinition,
  type RequestContext,
  type RequestContextPartReferences,
  RequestContextMcpsPartSchema,
  RequestContextRulesPartSchema,
  RequestContextSchema,
  RequestContextSkillsPartSchema,
  RequestContextSubagentsPartSchema,
} from "../proto/gen/agent/v1/agent_pb.js";

/** A part blob that is missing, mis-sized or not its part message: the run fails with invalid_argument. */
export class RequestContextPartError extends Error {}

export type PartKind = "rules" | "skills" | "subagents" | "mcps";

export interface PartReference {
  kind: PartKind;
  blobId: Uint8Array;
  byteLength: number;
}

/** The referenced parts, in field order; a part without a blob id is not sent. */
export function partReferences(refs: RequestContextPartReferences | undefined): PartReference[] {
  if (!refs) return [];
  const all: PartReference[] = [
    { kind: "rules", blobId: refs.rulesBlobId, byteLength: refs.rulesByteLength },
    { kind: "skills", blobId: refs.skillsBlobId, byteLength: refs.skillsByteLength },
    { kind: "subagents", blobId: refs.subagentsBlobId, byteLength: refs.subagentsByteLength },
    { kind: "mcps", blobId: refs.mcpsBlobId, byteLength: refs.mcpsByteLength },
  ];
  return all.filter((p) => p.blobId.byteLength > 0);
}

/** Which RequestContext fields each part carries; a part that is sent replaces them all. */
const PART_FIELDS = {
  rules: { schema: RequestContextRulesPartSchema, fields: ["rules", "nonFileRules", "cloudRule"] },
  skills: { schema: RequestContextSkillsPartSchema, fields: ["agentSkills", "skillOptions"] },
  subagents: { schema: RequestContextSubagentsPartSchema, fields: ["customSubagents"] },
  mcps: {
    schema: RequestContextMcpsPartSchema,
    fields: ["tools", "mcpInstructions", "mcpFileSystemOptions", "mcpMetaToolOptions"],
  },
} as const satisfies Record<PartKind, { schema: DescMessage; fields: readonly string[] }>;

type Fields = Record<string, unknown>;

/**
 * The effective request context: the inline `request_context`, each field it leaves unset taken from
 * `dynamic_context`, and the fields of every referenced part replaced by the part's. `blob` reads a part's bytes.
 */
export function effectiveRequestContext(
  inline: RequestContext | undefined,
  refs: RequestContextPartReferences | undefined,
  blob: (id: Uint8Array) => Uint8Array | undefined,
): RequestContext | undefined {
  const parts = partReferences(refs);
  const dynamic = refs?.dynamicContext;
  if (!dynamic && parts.length === 0) return inline;
  const out = inline ? clone(RequestContextSchema, inline) : create(RequestContextSchema);
  const target = out as unknown as Fields;
  if (dynamic) {
    const source = dynamic as unknown as Fields;
    for (const f of RequestContextSchema.fields)
      if (!isFieldSet(out, f) && isFieldSet(dynamic, f)) target[f.localName] = source[f.localName];
  }
  for (const part of parts) {
    const { schema, fields } = PART_FIELDS[part.kind];
    const decoded = decodePart(part, schema, blob(part.blobId)) as unknown as Fields;
    for (const name of fields) target[name] = decoded[name];
  }
  return out;
}

function decodePart<D extends DescMessage>(part: PartReference, schema: D, bytes: Uint8Array | undefined) {
  const what = `request_context_parts ${part.kind} blob ${Buffer.from(part.blobId).toString("hex")}`;
  if (!bytes) throw new RequestContextPartError(`${what} is neither stored nor provided`);
  if (bytes.byteLength !== part.byteLength)
    throw new RequestContextPartError(`${what} has ${bytes.byteLength} bytes, the reference says ${part.byteLength}`);
  try {
    return fromBinary(schema, bytes) as MessageShape<D>;
  } catch (e) {
    throw new RequestContextPartError(`${what} is not a ${schema.name}: ${(e as Error).message}`);
  }
}

/** The MCP servers' tools and instructions the run's request context carries (inline or from the MCP part). */
export interface McpContext {
  tools: McpToolDefinition[];
  instructions: McpInstructions[];
}

export function mcpContext(ctx: RequestContext | undefined): McpContext {
  return { tools: ctx?.tools ?? [], instructions: ctx?.mcpInstructions ?? [] };
}
