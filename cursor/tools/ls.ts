// Ls: card ls_tool_call, one Exec ls_args → ls_result (docs/protocol/cursor-tools.md §5; the card reuses
// LsArgs/LsResult).
import { create } from "@bufbuild/protobuf";
import { LsArgsSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { LsArgs, LsResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalStringArray, requiredString } from "./args.js";
import { lsTreeText } from "./result-text.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion } from "./types.js";
import { toolCall } from "./wire.js";

const NAME = "Ls";

function parseArgs(callId: string, args: Record<string, unknown>): LsArgs {
  return create(LsArgsSchema, {
    path: requiredString(args, "path"),
    ignore: optionalStringArray(args, "ignore") ?? [],
    toolCallId: callId,
  });
}

function card(callId: string, args?: LsArgs, result?: LsResult) {
  return toolCall(callId, { case: "lsToolCall", value: { args, result } });
}

/** Canonical text and outcome per LsResult branch; undefined when no branch is set. */
function outcome(r: LsResult["result"], path: string): { content: string; isError: boolean } | undefined {
  switch (r.case) {
    case "success":
      return r.value.directoryTreeRoot
        ? { content: lsTreeText(r.value.directoryTreeRoot), isError: false }
        : { content: `${path}/\n  (empty directory)`, isError: false };
    case "timeout": {
      const partial = r.value.directoryTreeRoot ? `\n${lsTreeText(r.value.directoryTreeRoot)}` : "";
      return { content: `Listing ${path} timed out; partial listing:${partial || " (none)"}`, isError: true };
    }
    case "error":
      return { content: `Error listing ${r.value.path || path}: ${r.value.error}`, isError: true };
    case "rejected": {
      const reason = r.value.reason ? `: ${r.value.reason}` : ".";
      return { content: `Listing ${r.value.path || path} was rejected${reason}`, isError: true };
    }
    case undefined:
      return undefined;
  }
}

export const lsDriver = singleExecDriver({
  name: NAME,
  parse: (call) => parseArgs(call.callId, call.args),
  card: (callId, args) => card(callId, args),
  request: (_call, args) => ({ case: "lsArgs", value: args }),
  resultCase: "lsResult",
  complete(call, args, result): ToolCompletion | undefined {
    const done = outcome(result.result, args.path);
    return done && { ...done, toolCall: card(call.callId, args, result) };
  },
});
