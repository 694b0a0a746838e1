// The MCP tools the client announces (docs/protocol/cursor-tools.md §5.8, §5.15): the run's definition table, keyed
// by (server, tool) for CallMcpTool and by model tool name for the tools offered to the model under their own names,
// and the tool definitions the model sees. Definitions always come from the client (the run request's mcp_tools or a
// GetMcpTools listing); nothing here derives a provider or a definition name from a server string.
import { createHash } from "node:crypto";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { McpStateServer, McpToolDefinition } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ToolDefinition } from "../../providers/types.js";
import type { McpCatalog, McpTool } from "./types.js";

/** Model tool names of MCP tools start with this; no catalog tool does, so they never shadow a mode tool. */
export const MCP_TOOL_PREFIX = "mcp__";
/** Providers refuse long tool lists (OpenAI: 128 tools); MCP tools past this many are reachable via CallMcpTool. */
export const MAX_OFFERED_MCP_TOOLS = 96;
const MAX_NAME = 64;

const key = (server: string, toolName: string) => `${server}\u0000${toolName}`;

/**
 * The model's name for an MCP tool: `mcp__<server>__<tool>`, every character outside [A-Za-z0-9_-] replaced by `_`;
 * past 64 characters, or when an earlier tool already took the name, it is cut to 55 and ends in `_` and 8 hex digits
 * of SHA-256(server NUL tool), so the same tool always gets the same name.
 */
export function mcpModelName(server: string, toolName: string, taken: ReadonlySet<string> = new Set()): string {
  const plain = `${MCP_TOOL_PREFIX}${server}__${toolName}`.replace(/[^A-Za-z0-9_-]/g, "_");
  if (plain.length <= MAX_NAME && !taken.has(plain)) return plain;
  const digest = createHash("sha256").update(key(server, toolName)).digest("hex").slice(0, 8);
  return `${plain.slice(0, MAX_NAME - 9)}_${digest}`;
}

/**
 * The server a run request's definition belongs to. McpToolDefinition carries no server field; the client names
 * each definition `<server identifier>-<tool name>` (captured: `plugin-browser-use-browser-use-browser_exec` for tool
 * `browser_exec` of server `plugin-browser-use-browser-use`), so the server is the name without that suffix. A
 * definition named otherwise is filed under its provider identifier.
 */
function serverOf(d: McpToolDefinition): string {
  const suffix = `-${d.toolName}`;
  return d.name.endsWith(suffix) && d.name.length > suffix.length
    ? d.name.slice(0, -suffix.length)
    : d.providerIdentifier;
}

function schemaOf(d: McpToolDefinition): unknown {
  return d.inputSchema ? toJson(ValueSchema, d.inputSchema) : undefined;
}

/** Builds the table; entries are sorted by (server, tool) so the same tools give the same names and order. */
function catalog(entries: Array<Omit<McpTool, "modelName">>): McpCatalog {
  const sorted = [...entries].sort((a, b) => (key(a.server, a.toolName) < key(b.server, b.toolName) ? -1 : 1));
  const byServerTool = new Map<string, McpTool>();
  const byModelName = new Map<string, McpTool>();
  for (const e of sorted) {
    if (byServerTool.has(key(e.server, e.toolName))) continue;
    const tool = { ...e, modelName: mcpModelName(e.server, e.toolName, new Set(byModelName.keys())) };
    byServerTool.set(key(e.server, e.toolName), tool);
    byModelName.set(tool.modelName, tool);
  }
  return { byServerTool, byModelName };
}

/**
 * The seam where announced MCP tools enter a run: the run request's `mcp_tools` today; the definitions of the request
 * context's MCP part can be passed here as well. Returns the table and the tool definitions offered to the model,
 * in a stable order after the mode's own tools.
 */
export function mcpToolsForRun(definitions: readonly McpToolDefinition[]): {
  catalog: McpCatalog;
  tools: ToolDefinition[];
} {
  const table = catalog(
    definitions.map((d) => ({
      server: serverOf(d),
      name: d.name,
      description: d.description,
      providerIdentifier: d.providerIdentifier,
      toolName: d.toolName,
      inputSchema: schemaOf(d),
    })),
  );
  const tools = [...table.byModelName.values()].slice(0, MAX_OFFERED_MCP_TOOLS).map(modelTool);
  return { catalog: table, tools };
}

/** A GetMcpTools listing is the client's live state: its servers' tools replace the table (names of tools still
 * there are kept, so calls the model already knows still resolve). */
export function refreshedCatalog(previous: McpCatalog | undefined, servers: readonly McpStateServer[]): McpCatalog {
  const listed = servers.flatMap((s) =>
    s.tools.map((d) => ({
      server: s.serverIdentifier,
      name: d.name,
      description: d.description,
      providerIdentifier: d.providerIdentifier,
      toolName: d.toolName,
      inputSchema: schemaOf(d),
    })),
  );
  const next = catalog(listed);
  if (!previous) return next;
  // A tool offered to the model under its own name keeps that name while it still exists.
  const byModelName = new Map<string, McpTool>();
  for (const [name, old] of previous.byModelName) {
    const now = next.byServerTool.get(key(old.server, old.toolName));
    if (now) byModelName.set(name, { ...now, modelName: name });
  }
  for (const [name, tool] of next.byModelName) if (!byModelName.has(name)) byModelName.set(name, tool);
  return { byServerTool: next.byServerTool, byModelName };
}

export function mcpToolOf(c: McpCatalog | undefined, server: string, toolName: string): McpTool | undefined {
  return c?.byServerTool.get(key(server, toolName));
}

/** The model-facing definition: the server's own description and input schema (an object schema is required by
 * every provider; anything else is offered as an empty object schema). */
function modelTool(t: McpTool): ToolDefinition {
  const schema = t.inputSchema as Record<string, unknown> | null;
  const objectSchema =
    typeof schema === "object" && schema !== null && !Array.isArray(schema) && (schema.type ?? "object") === "object";
  const parameters = objectSchema ? { type: "object", ...schema } : { type: "object", properties: {} };
  const origin = `MCP tool "${t.toolName}" of server "${t.server}".`;
  return { name: t.modelName, description: t.description ? `${origin} ${t.description}` : origin, parameters };
}
