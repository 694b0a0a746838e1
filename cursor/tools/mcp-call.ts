// CallMcpTool and the MCP tools offered under their own names (docs/protocol/cursor-tools.md §5.8, §5.15): card
// mcp_tool_call, one Exec mcp_args filled with the client's own definition (name, provider_identifier, tool_name) →
// mcp_result. A tool the run's table does not know is an error result for the model, never a half-filled mcp_args.
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { McpArgsSchema, McpToolResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { McpArgs, McpResult, McpSuccess, McpToolResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalBoolean, optionalObject, optionalString, parseOrInvalid, requiredString } from "./args.js";
import { mcpToolOf } from "./mcp-tools.js";
import type { DriverStep, McpTool, ToolContext, ToolDriver, ToolInvocation } from "./types.js";
import { completed, toolCall, unexpectedMessage, wireName } from "./wire.js";

type State = { args: McpArgs };
type Target = { server: string; toolName: string; arguments: Record<string, unknown> };

function card(callId: string, args?: McpArgs, result?: McpToolResult) {
  return toolCall(callId, { case: "mcpToolCall", value: { args, result } });
}

function mcpArgs(call: ToolInvocation, target: Target, tool: McpTool | undefined): McpArgs {
  const args = Object.fromEntries(
    Object.entries(target.arguments).map(([k, v]) => [k, fromJson(ValueSchema, v as JsonValue)]),
  );
  // Without a definition only the card is drawn from the model's words; no Exec is ever sent with it.
  return create(McpArgsSchema, {
    name: tool?.name ?? target.toolName,
    args,
    toolCallId: call.callId,
    providerIdentifier: tool?.providerIdentifier ?? "",
    toolName: tool?.toolName ?? target.toolName,
  });
}

/** The text the model reads for a successful call: text items, where long output went, images by size, and the
 * structured content as JSON. */
function successText(s: McpSuccess): string {
  const parts = s.content.map((item) => {
    const c = item.content;
    if (c.case === "text") {
      const where = c.value.outputLocation?.filePath;
      return where ? `${c.value.text}\n[Full output: ${where}]` : c.value.text;
    }
    if (c.case === "image") return `[Image: ${c.value.mimeType || "unknown type"}, ${c.value.data.length} bytes]`;
    return "";
  });
  if (s.structuredContent) parts.push(`Structured content: ${JSON.stringify(s.structuredContent)}`);
  const text = parts.filter((p) => p !== "").join("\n");
  return text || "The MCP tool returned no content.";
}

const error = (text: string) => create(McpToolResultSchema, { result: { case: "error", value: { error: text } } });

/** Canonical text, outcome and card result per mcp_result branch; "wait" for an approval, which is not a result. */
function outcome(
  name: string,
  r: McpResult["result"],
): { content: string; isError: boolean; result: McpToolResult } | "wait" | undefined {
  switch (r.case) {
    case "success":
      return {
        content: successText(r.value),
        isError: r.value.isError,
        result: create(McpToolResultSchema, { result: r }),
      };
    case "error": {
      const text = `MCP tool ${name} failed: ${r.value.error}`;
      return { content: text, isError: true, result: error(text) };
    }
    case "rejected": {
      const text = `The user rejected the call to MCP tool ${name}${r.value.reason ? `: ${r.value.reason}` : "."}`;
      return { content: text, isError: true, result: create(McpToolResultSchema, { result: r }) };
    }
    case "permissionDenied": {
      const text = `Permission denied for MCP tool ${name}${r.value.error ? `: ${r.value.error}` : "."}`;
      return { content: text, isError: true, result: create(McpToolResultSchema, { result: r }) };
    }
    case "toolNotFound": {
      const available = r.value.availableTools.length ? ` Available: ${r.value.availableTools.join(", ")}.` : "";
      const text = `MCP tool not found: ${r.value.name || name}.${available} Call GetMcpTools to see the current tools.`;
      return { content: text, isError: true, result: error(text) };
    }
    case "serverNotFound": {
      const available = r.value.availableServers.length ? ` Available: ${r.value.availableServers.join(", ")}.` : "";
      const text = `MCP server not found: ${r.value.name}.${available}`;
      return { content: text, isError: true, result: error(text) };
    }
    case "approved":
      return "wait";
    case undefined:
      return undefined;
  }
}

/** The driver shape both entries share; `target` reads the call, `resolve` finds the client's definition. */
function mcpCallDriver(
  name: string,
  target: (call: ToolInvocation) => Target,
  resolve: (call: ToolInvocation, t: Target, ctx: ToolContext) => McpTool | undefined,
  unknown: (call: ToolInvocation, t: Target) => string,
): ToolDriver<State> {
  const parsed = (call: ToolInvocation) => parseOrInvalid(name, () => target(call));
  return {
    name,
    placeholder: (callId) => card(callId),
    started(call, ctx) {
      const p = parsed(call);
      return "invalid" in p ? p : { toolCall: card(call.callId, mcpArgs(call, p.ok, resolve(call, p.ok, ctx))) };
    },
    begin(call, ctx): DriverStep<State> {
      const p = parsed(call);
      if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
      const tool = resolve(call, p.ok, ctx);
      const args = mcpArgs(call, p.ok, tool);
      if (!tool) {
        const text = unknown(call, p.ok);
        return completed({ args }, text, true, card(call.callId, args, error(text)));
      }
      return { kind: "exec", request: { case: "mcpArgs", value: args }, state: { args } };
    },
    onExecMessage(call, state, message) {
      if (message.case !== "mcpResult") return unexpectedMessage(name, "mcpResult", message, state);
      const done = outcome(state.args.toolName, message.value.result);
      if (done === "wait") return { kind: "wait", state };
      if (!done) return { kind: "protocol_error", message: `${name}: ${wireName("mcpResult")} has no result set` };
      return completed(state, done.content, done.isError, card(call.callId, state.args, done.result));
    },
  };
}

/** CallMcpTool {server, toolName, arguments}: the definition is looked up by (server, tool). */
export const callMcpToolDriver = mcpCallDriver(
  "CallMcpTool",
  (call) => {
    // Smart-mode approval fields are checked but not sent: the client asks its user itself.
    optionalString(call.args, "description");
    optionalBoolean(call.args, "requestSmartModeApproval");
    optionalString(call.args, "smartModeBlockReason");
    return {
      server: requiredString(call.args, "server"),
      toolName: requiredString(call.args, "toolName"),
      arguments: optionalObject(call.args, "arguments") ?? {},
    };
  },
  (_call, t, ctx) => mcpToolOf(ctx.mcp, t.server, t.toolName),
  (_call, t) =>
    `MCP tool "${t.toolName}" of server "${t.server}" is not known in this run. Call GetMcpTools to list the tools ` +
    "the client has now, then call one of those.",
);

/** An MCP tool offered under its own model name (`mcp__…`): its arguments are the tool's own. */
export const mcpToolDriver = mcpCallDriver(
  "MCP tool",
  (call) => ({ server: "", toolName: call.name, arguments: call.args }),
  (call, _t, ctx) => ctx.mcp?.byModelName.get(call.name),
  (call) =>
    `The MCP tool ${call.name} no longer exists on the client. Call GetMcpTools to list the tools it has now, ` +
    "then use CallMcpTool.",
);
