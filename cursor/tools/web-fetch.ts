// WebFetch: card web_fetch_tool_call; two phases, one model call (docs/protocol/cursor-tools.md §5.9). First the
// approval, an Interaction web_fetch_request_query answered approved or rejected; a rejection is the terminal
// result, an approval never is. Then the same call sends the Exec fetch_args{url, tool_call_id} under a new Exec id,
// and its fetch_result becomes the WebFetchResult card and the text result.
import { create } from "@bufbuild/protobuf";
import {
  FetchArgsSchema,
  WebFetchArgsSchema,
  WebFetchRequestQuerySchema,
  WebFetchResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { FetchResult, WebFetchArgs, WebFetchResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalBoolean, optionalString, parseOrInvalid, requiredString } from "./args.js";
import type { DriverStep, InteractionAnswer, ToolDriver, ToolInvocation } from "./types.js";
import { completed, toolCall, unexpectedMessage, wireName } from "./wire.js";

const NAME = "WebFetch";

const protocolError = (message: string): DriverStep<State> => ({
  kind: "protocol_error",
  message: `${NAME}: ${message}`,
});

type State = { args: WebFetchArgs; phase: "approval" | "fetch" };

/** `requestSmartModeApproval` / `smartModeBlockReason` are checked but not sent: the query has no field for them. */
function parseArgs(call: ToolInvocation): WebFetchArgs {
  optionalBoolean(call.args, "requestSmartModeApproval");
  optionalString(call.args, "smartModeBlockReason");
  return create(WebFetchArgsSchema, { url: requiredString(call.args, "url"), toolCallId: call.callId });
}

function card(callId: string, args?: WebFetchArgs, result?: WebFetchResult) {
  return toolCall(callId, { case: "webFetchToolCall", value: { args, result } });
}

function finish(
  call: ToolInvocation,
  state: State,
  content: string,
  isError: boolean,
  result: WebFetchResult,
): DriverStep<State> {
  return completed(state, content, isError, card(call.callId, state.args, result));
}

function onApproval(call: ToolInvocation, state: State, answer: InteractionAnswer): DriverStep<State> {
  if (answer.case !== "webFetchRequestResponse") {
    const got = answer.case ? wireName(answer.case) : "nothing";
    return protocolError(`expected web_fetch_request_response, got ${got}`);
  }
  const r = answer.value.result;
  switch (r.case) {
    case "approved": {
      const request = create(FetchArgsSchema, { url: state.args.url, toolCallId: call.callId });
      return { kind: "exec", request: { case: "fetchArgs", value: request }, state: { ...state, phase: "fetch" } };
    }
    case "rejected": {
      const reason = r.value.reason;
      const typed = create(WebFetchResultSchema, { result: { case: "rejected", value: { reason } } });
      const content = `The user declined to fetch ${state.args.url}${reason ? `: ${reason}` : "."}`;
      return finish(call, state, content, true, typed);
    }
    case undefined:
      // An approve/reject answer must pick its branch: an empty message is not a rejection.
      return protocolError("web_fetch_request_response has neither approved nor rejected set");
  }
}

/** The page as the model reads it: where it came from, then its content as the client converted it. */
function fetchedText(s: Extract<FetchResult["result"], { case: "success" }>["value"], url: string): string {
  const meta = [s.statusCode ? `HTTP ${s.statusCode}` : "", s.contentType].filter((m) => m !== "").join(", ");
  return `Fetched ${s.url || url}${meta ? ` (${meta})` : ""}:\n\n${s.content === "" ? "(empty page)" : s.content}`;
}

function onFetch(call: ToolInvocation, state: State, fetched: FetchResult): DriverStep<State> {
  const r = fetched.result;
  switch (r.case) {
    case "success": {
      const value = { url: r.value.url || state.args.url, markdown: r.value.content };
      const typed = create(WebFetchResultSchema, { result: { case: "success", value } });
      return finish(call, state, fetchedText(r.value, state.args.url), false, typed);
    }
    case "error": {
      const value = { url: r.value.url || state.args.url, error: r.value.error };
      const typed = create(WebFetchResultSchema, { result: { case: "error", value } });
      return finish(call, state, `Fetching ${value.url} failed: ${value.error}`, true, typed);
    }
    case undefined:
      return protocolError("fetch_result has no result branch set");
  }
}

export const webFetchDriver: ToolDriver<State> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(NAME, () => parseArgs(call));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok) };
  },
  begin(call): DriverStep<State> {
    const p = parseOrInvalid(NAME, () => parseArgs(call));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const value = create(WebFetchRequestQuerySchema, { args: p.ok, skipApproval: false });
    return { kind: "query", query: { case: "webFetchRequestQuery", value }, state: { args: p.ok, phase: "approval" } };
  },
  onInteractionResponse(call, state, answer) {
    if (state.phase !== "approval") return protocolError("an interaction_response arrived after the approval");
    return onApproval(call, state, answer);
  },
  onExecMessage(call, state, message) {
    if (state.phase !== "fetch") return protocolError("the client answered an Exec it was never sent");
    if (message.case !== "fetchResult") return unexpectedMessage(NAME, "fetchResult", message, state);
    return onFetch(call, state, message.value);
  },
};
