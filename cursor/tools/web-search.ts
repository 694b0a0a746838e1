// WebSearch (docs/protocol/cursor-tools.md §5.9): card web_search_tool_call; an approval query
// web_search_request_query{args} → web_search_request_response. A rejection is the typed rejected result; an approval
// is no result: the gateway then runs the search on the configured search service (a side effect the engine
// performs), and its references, or its error, end the call.
import { create } from "@bufbuild/protobuf";
import {
  WebSearchArgsSchema,
  WebSearchRequestQuerySchema,
  WebSearchResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { WebSearchArgs, WebSearchResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalString, parseOrInvalid, requiredString } from "./args.js";
import type { DriverStep, ToolDriver, ToolInvocation } from "./types.js";
import { completed, toolCall, wireName } from "./wire.js";

const NAME = "WebSearch";

type State = { args: WebSearchArgs };

function parseArgs(call: ToolInvocation): WebSearchArgs {
  optionalString(call.args, "explanation");
  return create(WebSearchArgsSchema, { searchTerm: requiredString(call.args, "search_term"), toolCallId: call.callId });
}

function card(callId: string, args?: WebSearchArgs, result?: WebSearchResult) {
  return toolCall(callId, { case: "webSearchToolCall", value: { args, result } });
}

const protocolError = (message: string): DriverStep<State> => ({
  kind: "protocol_error",
  message: `${NAME}: ${message}`,
});

export const webSearchDriver: ToolDriver<State> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(NAME, () => parseArgs(call));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok) };
  },
  begin(call): DriverStep<State> {
    const p = parseOrInvalid(NAME, () => parseArgs(call));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const value = create(WebSearchRequestQuerySchema, { args: p.ok });
    return { kind: "query", query: { case: "webSearchRequestQuery", value }, state: { args: p.ok } };
  },
  onExecMessage: () => protocolError("the client answered an Exec it was never sent"),
  onInteractionResponse(call, state, answer) {
    if (answer.case !== "webSearchRequestResponse")
      return protocolError(
        `expected web_search_request_response, got ${answer.case ? wireName(answer.case) : "nothing"}`,
      );
    const r = answer.value.result;
    if (r.case === "approved")
      return { kind: "service", request: { kind: "webSearch", query: state.args.searchTerm }, state };
    if (r.case === "rejected") {
      const text = `The user rejected the web search${r.value.reason ? `: ${r.value.reason}` : "."}`;
      const result = create(WebSearchResultSchema, { result: { case: "rejected", value: { reason: r.value.reason } } });
      return completed(state, text, true, card(call.callId, state.args, result));
    }
    // An approval answer must pick its branch; an empty one is not a rejection (§5.10).
    return protocolError("web_search_request_response has no result set");
  },
  onServiceResult(call, state, outcome) {
    if (outcome.kind === "error") {
      const result = create(WebSearchResultSchema, { result: { case: "error", value: { error: outcome.message } } });
      return completed(state, outcome.message, true, card(call.callId, state.args, result));
    }
    if (outcome.kind !== "webSearch") return protocolError(`the search service answered ${outcome.kind}`);
    const { references } = outcome;
    const result = create(WebSearchResultSchema, { result: { case: "success", value: { references } } });
    const text = references.length
      ? references.map((r, i) => `${i + 1}. ${r.title}\nURL: ${r.url}${r.chunk ? `\n${r.chunk}` : ""}`).join("\n\n")
      : `No results found for "${state.args.searchTerm}".`;
    return completed(state, text, false, card(call.callId, state.args, result));
  },
};
