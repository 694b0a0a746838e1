// GetMcpTools (docs/protocol/cursor-tools.md §5.8): card get_mcp_tools_tool_call, one Exec mcp_state_exec_args →
// mcp_state_exec_result. The client answers with its live MCP servers; the gateway filters them by server, tool name
// and pattern into the text result, and the whole listing refreshes the run's definition table.
import { create, toJson } from "@bufbuild/protobuf";
import {
  GetMcpToolsAgentResultSchema,
  GetMcpToolsArgsSchema,
  McpStateExecArgsSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { GetMcpToolsArgs, McpStateExecResult, McpStateServer } from "../../proto/gen/agent/v1/agent_pb.js";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { ArgsError, optionalString } from "./args.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion, ToolInvocation } from "./types.js";
import { toolCall } from "./wire.js";

const NAME = "GetMcpTools";

function parseArgs(call: ToolInvocation): GetMcpToolsArgs {
  const pattern = optionalString(call.args, "pattern");
  if (pattern !== undefined) {
    try {
      new RegExp(pattern);
    } catch {
      throw new ArgsError(`"pattern" is not a valid regular expression`);
    }
  }
  return create(GetMcpToolsArgsSchema, {
    server: optionalString(call.args, "server"),
    toolName: optionalString(call.args, "toolName"),
    pattern,
    toolCallId: call.callId,
  });
}

function card(callId: string, args?: GetMcpToolsArgs, text?: { content: string } | { error: string }) {
  const result =
    text === undefined
      ? undefined
      : create(GetMcpToolsAgentResultSchema, {
          result: "content" in text ? { case: "success", value: text } : { case: "error", value: text },
        });
  return toolCall(callId, { case: "getMcpToolsToolCall", value: { args, result } });
}

/** The servers and tools the model asked about, with how to call each. */
export function listingText(servers: readonly McpStateServer[], args: GetMcpToolsArgs): string {
  const pattern = args.pattern === undefined ? undefined : new RegExp(args.pattern);
  const blocks: string[] = [];
  for (const s of servers) {
    if (args.server !== undefined && args.server !== s.serverIdentifier && args.server !== s.serverName) continue;
    const tools = s.tools.filter(
      (t) => (args.toolName === undefined || t.toolName === args.toolName) && (!pattern || pattern.test(t.toolName)),
    );
    if (tools.length === 0 && (args.toolName !== undefined || pattern)) continue;
    const lines = [`Server: ${s.serverIdentifier}${s.serverName ? ` (${s.serverName})` : ""}`];
    if (s.status) lines.push(`Status: ${s.status}`);
    for (const i of s.instructions) if (i.instructions) lines.push(`Instructions: ${i.instructions}`);
    for (const t of tools) {
      lines.push(`- ${t.toolName}${t.description ? `: ${t.description}` : ""}`);
      if (t.inputSchema) lines.push(`  Input schema: ${JSON.stringify(toJson(ValueSchema, t.inputSchema))}`);
    }
    blocks.push(lines.join("\n"));
  }
  if (blocks.length === 0) return "No MCP tools match.";
  return `${blocks.join("\n\n")}\n\nCall a tool with CallMcpTool {server, toolName, arguments}.`;
}

function completion(call: ToolInvocation, args: GetMcpToolsArgs, r: McpStateExecResult): ToolCompletion | undefined {
  switch (r.result.case) {
    case "success": {
      const content = listingText(r.result.value.servers, args);
      return {
        content,
        isError: false,
        toolCall: card(call.callId, args, { content }),
        mcpServers: r.result.value.servers,
      };
    }
    case "error": {
      const error = `Listing the MCP tools failed: ${r.result.value.error}`;
      return { content: error, isError: true, toolCall: card(call.callId, args, { error }) };
    }
    case "rejected": {
      const reason = r.result.value.reason;
      const error = `Listing the MCP tools was rejected${reason ? `: ${reason}` : "."}`;
      return { content: error, isError: true, toolCall: card(call.callId, args, { error }) };
    }
    case undefined:
      return undefined;
  }
}

export const getMcpToolsDriver = singleExecDriver({
  name: NAME,
  parse: parseArgs,
  card: (callId, args) => card(callId, args),
  // McpStateExecArgs has no known fields (its server filter is not in the wire facts): the client lists every server.
  request: () => ({ case: "mcpStateExecArgs", value: create(McpStateExecArgsSchema) }),
  resultCase: "mcpStateExecResult",
  complete: completion,
});
