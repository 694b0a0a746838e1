// Read: card read_tool_call, one Exec read_args → read_result (docs/protocol/cursor-tools.md §2.5, §5).
import { create } from "@bufbuild/protobuf";
import { ReadArgsSchema, ReadToolArgsSchema, ReadToolResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ReadResult, ReadSuccess, ReadToolArgs, ReadToolResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalInteger, requiredString } from "./args.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion, ToolInvocation } from "./types.js";
import { toolCall } from "./wire.js";

const NAME = "Read";
const UINT32_MAX = 2 ** 32 - 1;

function parseArgs(args: Record<string, unknown>): ReadToolArgs {
  return create(ReadToolArgsSchema, {
    path: requiredString(args, "path"),
    offset: optionalInteger(args, "offset"),
    // ReadArgs.limit is uint32 and ReadToolArgs.limit int32: accept what both can carry.
    limit: optionalInteger(args, "limit", 0),
  });
}

function card(callId: string, args?: ReadToolArgs, result?: ReadToolResult) {
  return toolCall(callId, { case: "readToolCall", value: { args, result } });
}

function successCompletion(call: ToolInvocation, args: ReadToolArgs, s: ReadSuccess): ToolCompletion {
  const content = s.output.case === "content" ? s.output.value : undefined;
  const result = create(ReadToolResultSchema, {
    result: {
      case: "success",
      value: {
        path: s.path || args.path,
        totalLines: Math.max(0, s.totalLines),
        fileSize: Number(s.fileSize > BigInt(UINT32_MAX) ? BigInt(UINT32_MAX) : s.fileSize),
        exceededLimit: s.truncated,
        isEmpty: content === "",
        output:
          s.output.case === "data"
            ? { case: "data", value: s.output.value }
            : { case: "content", value: content ?? "" },
      },
    },
  });
  let text: string;
  if (content !== undefined) {
    text = s.truncated ? `${content}\n\n[Output truncated: read the rest with offset and limit.]` : content;
  } else if (s.output.case === "data") {
    text = `${s.path || args.path} is a binary file (${s.output.value.length} bytes); it cannot be shown as text.`;
  } else {
    text = `Reading ${s.path || args.path} returned no inline content.`;
  }
  return { content: text, isError: false, toolCall: card(call.callId, args, result), readPath: s.path || args.path };
}

function failureText(
  r: Exclude<ReadResult["result"], { case: "success" } | { case: undefined }>,
  path: string,
): string {
  switch (r.case) {
    case "error":
      return `Error reading ${r.value.path || path}: ${r.value.error}`;
    case "rejected":
      return `Reading ${r.value.path || path} was rejected${r.value.reason ? `: ${r.value.reason}` : "."}`;
    case "fileNotFound":
      return `File not found: ${r.value.path || path}`;
    case "permissionDenied":
      return `Permission denied reading ${r.value.path || path}`;
    case "invalidFile":
      return `Cannot read ${r.value.path || path}${r.value.reason ? `: ${r.value.reason}` : ": invalid file."}`;
  }
}

function completion(call: ToolInvocation, args: ReadToolArgs, r: ReadResult): ToolCompletion | undefined {
  if (r.result.case === undefined) return undefined;
  if (r.result.case === "success") return successCompletion(call, args, r.result.value);
  const text = failureText(r.result, args.path);
  const result = create(ReadToolResultSchema, { result: { case: "error", value: { errorMessage: text } } });
  return { content: text, isError: true, toolCall: card(call.callId, args, result) };
}

export const readDriver = singleExecDriver({
  name: NAME,
  parse: (call) => parseArgs(call.args),
  card: (callId, args) => card(callId, args),
  request: (call, args) => ({
    case: "readArgs",
    value: create(ReadArgsSchema, { path: args.path, toolCallId: call.callId, offset: args.offset, limit: args.limit }),
  }),
  resultCase: "readResult",
  complete: completion,
});
