// Grep: card grep_tool_call, one Exec grep_args → grep_result (seed 003 §26.13; tool-wire-map §2). The card
// reuses GrepArgs/GrepResult as they are, so the client's typed result goes back unchanged.
import { create } from "@bufbuild/protobuf";
import { GrepArgsSchema } from "../../../proto/gen/agent/v1/agent_pb.js";
import type { GrepArgs, GrepResult } from "../../../proto/gen/agent/v1/agent_pb.js";
import {
  optionalBoolean,
  optionalEnum,
  optionalInteger,
  optionalString,
  parseOrInvalid,
  requiredString,
} from "./args.js";
import { grepText } from "./result-text.js";
import type { DriverStep, ToolDriver } from "./types.js";
import { completed, toolCall, unexpectedMessage } from "./wire.js";

const NAME = "Grep";
const OUTPUT_MODES = ["content", "files_with_matches", "count"] as const;

type GrepState = { args: GrepArgs };

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

export const grepDriver: ToolDriver<GrepState> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const parsed = parseOrInvalid(NAME, () => parseArgs(call.callId, call.args));
    return "invalid" in parsed ? parsed : { toolCall: card(call.callId, parsed.ok) };
  },
  begin(call): DriverStep<GrepState> {
    const parsed = parseOrInvalid(NAME, () => parseArgs(call.callId, call.args));
    if ("invalid" in parsed) return { kind: "protocol_error", message: parsed.invalid };
    return { kind: "exec", request: { case: "grepArgs", value: parsed.ok }, state: { args: parsed.ok } };
  },
  onExecMessage(call, state, message) {
    if (message.case !== "grepResult") return unexpectedMessage(NAME, "grepResult", message, state);
    const result = message.value;
    const done = card(call.callId, state.args, result);
    switch (result.result.case) {
      case "success":
        return completed(state, grepText(result.result.value), false, done);
      case "error":
        return completed(state, `Grep failed: ${result.result.value.error}`, true, done);
      case undefined:
        return { kind: "protocol_error", message: `${NAME}: grep_result has no result branch set` };
    }
  },
};
