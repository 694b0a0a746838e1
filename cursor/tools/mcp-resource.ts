// FetchMcpResource (docs/protocol/cursor-tools.md §5.7): card read_mcp_resource_tool_call, one Exec
// read_mcp_resource_exec_args → read_mcp_resource_exec_result, whose typed result goes to the card unchanged.
import { create } from "@bufbuild/protobuf";
import { ReadMcpResourceExecArgsSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ReadMcpResourceExecArgs, ReadMcpResourceExecResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalBoolean, optionalString, requiredString } from "./args.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion, ToolInvocation } from "./types.js";
import { toolCall } from "./wire.js";

function parseArgs(call: ToolInvocation): ReadMcpResourceExecArgs {
  // Smart-mode approval fields are checked but not sent: the client asks its user itself.
  optionalBoolean(call.args, "requestSmartModeApproval");
  optionalString(call.args, "smartModeBlockReason");
  return create(ReadMcpResourceExecArgsSchema, {
    server: requiredString(call.args, "server"),
    uri: requiredString(call.args, "uri"),
    downloadPath: optionalString(call.args, "downloadPath"),
  });
}

function card(callId: string, args?: ReadMcpResourceExecArgs, result?: ReadMcpResourceExecResult) {
  return toolCall(callId, { case: "readMcpResourceToolCall", value: { args, result } });
}

type Answered = Exclude<ReadMcpResourceExecResult["result"], { case: undefined }>;

function text(args: ReadMcpResourceExecArgs, r2: Answered): { content: string; isError: boolean } {
  switch (r2.case) {
    case "success": {
      const s = r2.value;
      const saved = s.downloadPath ? ` It was saved to ${s.downloadPath}.` : "";
      if (s.content.case === "text") return { content: s.content.value, isError: false };
      if (s.content.case === "blob") {
        const type = s.mimeType ? `${s.mimeType}, ` : "";
        return {
          content: `${s.uri || args.uri} is binary (${type}${s.content.value.length} bytes).${saved}`,
          isError: false,
        };
      }
      return { content: `${s.uri || args.uri} has no content.${saved}`, isError: false };
    }
    case "error":
      return { content: `Error reading MCP resource ${r2.value.uri || args.uri}: ${r2.value.error}`, isError: true };
    case "rejected": {
      const reason = r2.value.reason ? `: ${r2.value.reason}` : ".";
      return { content: `Reading MCP resource ${r2.value.uri || args.uri} was rejected${reason}`, isError: true };
    }
    case "notFound":
      return { content: `MCP resource not found: ${r2.value.uri || args.uri}`, isError: true };
  }
}

function completion(
  call: ToolInvocation,
  args: ReadMcpResourceExecArgs,
  r: ReadMcpResourceExecResult,
): ToolCompletion | undefined {
  if (r.result.case === undefined) return undefined;
  return { ...text(args, r.result), toolCall: card(call.callId, args, r) };
}

export const fetchMcpResourceDriver = singleExecDriver({
  name: "FetchMcpResource",
  parse: parseArgs,
  card: (callId, args) => card(callId, args),
  request: (_call, args) => ({ case: "readMcpResourceExecArgs", value: args }),
  resultCase: "readMcpResourceExecResult",
  complete: completion,
});
