// Grep: card grep_tool_call, one Exec grep_args → grep_result (docs/protocol/cursor-tools.md §5). The card
// reuses GrepArgs/GrepResult as they are, so the client's typed result goes back unchanged.
import { create } from "@bufbuild/protobuf";
import { GrepArgsSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { GrepArgs, GrepResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalBoolean, optionalEnum, optionalInteger, optionalString, requiredString } from "./args.js";
import { grepText } from "./result-text.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion } from "./types.js";
import { toolCall } from "./wire.js";

const NAME = "Grep";
const OUTPUT_MODES = ["content", "files_with_matches", "count"] as const;

/** Model flags -A/-B/-C/-i map to the named GrepArgs fields; the rest pass through under their own names. */
function parseArgs(callId: string, args: Record<string, unknown>): GrepArgs {
  return create(GrepArgsSchema, {
    pattern: requiredString(args, "pattern"),
    path: optionalString(args, "path"),
    glob: optionalString(args, "glob"),
    outputMode: optionalEnum(args, "output_mode", OUTPUT_MODES),
    contextBefore: optionalInteger(args, "-B", 0),
    contextAfter: optionalInteger(args, "-A", 0),
    context: optionalInteger(args, "-C", 0),
    caseInsensitive: optionalBoolean(args, "-i"),
    type: optionalString(args, "type"),
    headLimit: optionalInteger(args, "head_limit", 0),
    offset: optionalInteger(args, "offset", 0),
    multiline: optionalBoolean(args, "multiline"),
    toolCallId: callId,
  });
}

function card(callId: string, args?: GrepArgs, result?: GrepResult) {
  return toolCall(callId, { case: "grepToolCall", value: { args, result } });
}

export const grepDriver = singleExecDriver({
  name: NAME,
  parse: (call) => parseArgs(call.callId, call.args),
  card: (callId, args) => card(callId, args),
  request: (_call, args) => ({ case: "grepArgs", value: args }),
  resultCase: "grepResult",
  complete(call, args, result): ToolCompletion | undefined {
    const done = card(call.callId, args, result);
    switch (result.result.case) {
      case "success":
        return { content: grepText(result.result.value), isError: false, toolCall: done };
      case "error":
        return { content: `Grep failed: ${result.result.value.error}`, isError: true, toolCall: done };
      case undefined:
        return undefined;
    }
  },
});
