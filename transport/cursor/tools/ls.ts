// Ls: card ls_tool_call, one Exec ls_args → ls_result (tool-wire-map §2; the card reuses LsArgs/LsResult).
import { create } from "@bufbuild/protobuf";
import { LsArgsSchema } from "../../../proto/gen/agent/v1/agent_pb.js";
import type { LsArgs, LsResult } from "../../../proto/gen/agent/v1/agent_pb.js";
import { optionalStringArray, parseOrInvalid, requiredString } from "./args.js";
import { lsTreeText } from "./result-text.js";
import type { DriverStep, ToolDriver } from "./types.js";
import { completed, toolCall, unexpectedMessage } from "./wire.js";

const NAME = "Ls";

type LsState = { args: LsArgs };

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

export const lsDriver: ToolDriver<LsState> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const parsed = parseOrInvalid(NAME, () => parseArgs(call.callId, call.args));
    return "invalid" in parsed ? parsed : { toolCall: card(call.callId, parsed.ok) };
  },
  begin(call): DriverStep<LsState> {
    const parsed = parseOrInvalid(NAME, () => parseArgs(call.callId, call.args));
    if ("invalid" in parsed) return { kind: "protocol_error", message: parsed.invalid };
    return { kind: "exec", request: { case: "lsArgs", value: parsed.ok }, state: { args: parsed.ok } };
  },
  onExecMessage(call, state, message) {
    if (message.case !== "lsResult") return unexpectedMessage(NAME, "lsResult", message, state);
    const done = outcome(message.value.result, state.args.path);
    if (!done) return { kind: "protocol_error", message: `${NAME}: ls_result has no result branch set` };
    return completed(state, done.content, done.isError, card(call.callId, state.args, message.value));
  },
};
