// Delete: card delete_tool_call, one Exec delete_args → delete_result (docs/protocol/cursor-tools.md §5.7). The card
// reuses DeleteArgs/DeleteResult as they are, so the client's typed result goes back unchanged.
import { create } from "@bufbuild/protobuf";
import { DeleteArgsSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { DeleteArgs, DeleteResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { requiredString } from "./args.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion } from "./types.js";
import { toolCall } from "./wire.js";

const NAME = "Delete";

function card(callId: string, args?: DeleteArgs, result?: DeleteResult) {
  return toolCall(callId, { case: "deleteToolCall", value: { args, result } });
}

const reasonSuffix = (reason: string) => (reason ? `: ${reason}` : ".");

/** Canonical text and outcome per DeleteResult branch; undefined when no branch is set. */
function outcome(r: DeleteResult["result"], path: string): { content: string; isError: boolean } | undefined {
  switch (r.case) {
    case "success":
      return { content: `Deleted ${r.value.path || path} (${r.value.fileSize} bytes).`, isError: false };
    case "fileNotFound":
      return { content: `File not found: ${r.value.path || path}`, isError: true };
    case "notFile": {
      const kind = r.value.actualType ? ` (it is a ${r.value.actualType})` : "";
      return { content: `Cannot delete ${r.value.path || path}: not a file${kind}.`, isError: true };
    }
    case "permissionDenied": {
      const detail = r.value.clientVisibleError || (r.value.isReadonly ? "the file is read-only" : "");
      return { content: `Permission denied deleting ${r.value.path || path}${reasonSuffix(detail)}`, isError: true };
    }
    case "fileBusy":
      return { content: `Cannot delete ${r.value.path || path}: the file is in use.`, isError: true };
    case "rejected":
      return { content: `Deleting ${r.value.path || path} was rejected${reasonSuffix(r.value.reason)}`, isError: true };
    case "error":
      return { content: `Error deleting ${r.value.path || path}: ${r.value.error}`, isError: true };
    case undefined:
      return undefined;
  }
}

export const deleteDriver = singleExecDriver({
  name: NAME,
  parse: (call) => create(DeleteArgsSchema, { path: requiredString(call.args, "path"), toolCallId: call.callId }),
  card: (callId, args) => card(callId, args),
  request: (_call, args) => ({ case: "deleteArgs", value: args }),
  resultCase: "deleteResult",
  complete(call, args, result): ToolCompletion | undefined {
    const done = outcome(result.result, args.path);
    return done && { ...done, toolCall: card(call.callId, args, result) };
  },
});
