// worker_command (docs/protocol/aep.md §3) on the Claude Code CLI: the AEP command names this driver answers, the
// control request each becomes (docs/protocol/claude-code.md §6), and the neutral events its response maps to.
// Only requests that read the worker's state are offered; ones that change it go through inputs and controls.
import type { WorkerEvent } from "../types.js";

/** AEP command → the CLI's control request subtype. */
export const WORKER_COMMANDS: ReadonlyMap<string, string> = new Map([
  ["context_usage", "get_context_usage"],
  ["mcp_status", "mcp_status"],
  ["settings", "get_settings"],
  ["session_cost", "get_session_cost"],
  ["usage", "get_usage"],
  ["models", "list_models"],
  ["version", "get_binary_version"],
  ["plan", "get_plan"],
  ["workspace_diff", "get_workspace_diff"],
]);

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const record = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};

/** The events a command's response becomes: context_usage and mcp_status have AEP kinds, the rest go as raw. */
export function commandEvents(command: string, response: unknown): WorkerEvent[] {
  const r = record(response);
  if (command === "context_usage") {
    const categories = Array.isArray(r.categories) ? r.categories.map(record) : [];
    const detail = {
      total_tokens: num(r.totalTokens) ?? 0,
      max_tokens: num(r.maxTokens) ?? 0,
      percentage: num(r.percentage) ?? 0,
      ...(typeof r.model === "string" ? { model: r.model } : {}),
      categories: categories.map((c) => ({ name: String(c.name ?? c.id ?? ""), tokens: num(c.tokens) ?? 0 })),
    };
    return [{ type: "context.usage", detail }];
  }
  if (command === "mcp_status")
    return [{ type: "mcp.status", servers: Array.isArray(r.mcpServers) ? r.mcpServers : [] }];
  return [{ type: "raw", frame: { type: "worker_command", command, response } }];
}
