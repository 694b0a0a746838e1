import { expect } from "chai";
import type { InteractionResponse } from "../../proto/gen/agent/v1/agent_pb.js";
import { webFetchDriver } from "../../cursor/tools/web-fetch.js";
import type { DriverStep } from "../../cursor/tools/types.js";
import {
  CALL_ID,
  branch,
  clientMessage,
  completionOf,
  ctx,
  execOf,
  invocation,
  protocolErrorOf,
  startedCall,
} from "./helpers.js";

const URL = "https://example.com/docs";
const call = invocation("WebFetch", { url: URL });

function queryOf<S>(step: DriverStep<S>) {
  if (step.kind !== "query") expect.fail(`expected a query step, got ${step.kind}`);
  return step;
}

type Decision = Extract<InteractionResponse["result"], { case: "webFetchRequestResponse" }>["value"]["result"];
const response = (result: Decision): InteractionResponse["result"] => ({
  case: "webFetchRequestResponse",
  value: { $typeName: "agent.v1.WebFetchRequestResponse", result },
});
const approved = response({ case: "approved", value: { $typeName: "agent.v1.WebFetchRequestResponse.Approved" } });

function approve() {
  const { state } = queryOf(webFetchDriver.begin(call, ctx));
  return execOf(webFetchDriver.onInteractionResponse!(call, state, approved));
}

describe("WebFetch driver", () => {
  it("asks for approval first: web_fetch_request_query with the url and the call id, never skipping approval", () => {
    const card = branch(startedCall(webFetchDriver.started(call, ctx)), "webFetchToolCall");
    expect(card.args).to.include({ url: URL, toolCallId: CALL_ID });
    const { query } = queryOf(webFetchDriver.begin(call, ctx));
    if (query.case !== "webFetchRequestQuery") expect.fail(`expected web_fetch_request_query, got ${query.case}`);
    expect(query.value.args).to.include({ url: URL, toolCallId: CALL_ID });
    expect(query.value.skipApproval).to.equal(false);
  });

  it("an approval is not a result: it sends fetch_args for the same url and call", () => {
    const { request } = approve();
    expect(request.case).to.equal("fetchArgs");
    expect(request.value).to.include({ url: URL, toolCallId: CALL_ID });
  });

  it("the fetched page becomes WebFetchResult.success and the text names where it came from", () => {
    const { state } = approve();
    const page = { url: URL, content: "# Docs\nHello", statusCode: 200, contentType: "text/html" };
    const done = completionOf(
      webFetchDriver.onExecMessage(
        call,
        state,
        clientMessage({ case: "fetchResult", value: { result: { case: "success", value: page } } }),
      ),
    );
    expect(done).to.include({ isError: false, content: `Fetched ${URL} (HTTP 200, text/html):\n\n# Docs\nHello` });
    const result = branch(done.toolCall, "webFetchToolCall").result?.result;
    expect(result).to.deep.include({ case: "success" });
    expect(result?.value).to.include({ url: URL, markdown: "# Docs\nHello" });
  });

  it("a fetch error becomes WebFetchResult.error, an error result", () => {
    const { state } = approve();
    const message = clientMessage({
      case: "fetchResult",
      value: { result: { case: "error", value: { url: URL, error: "getaddrinfo ENOTFOUND" } } },
    });
    const done = completionOf(webFetchDriver.onExecMessage(call, state, message));
    expect(done).to.include({ isError: true, content: `Fetching ${URL} failed: getaddrinfo ENOTFOUND` });
    expect(branch(done.toolCall, "webFetchToolCall").result?.result.case).to.equal("error");
  });

  it("a rejection ends the call with WebFetchResult.rejected and no Exec", () => {
    const { state } = queryOf(webFetchDriver.begin(call, ctx));
    const rejected = response({
      case: "rejected",
      value: { $typeName: "agent.v1.WebFetchRequestResponse.Rejected", reason: "not that site" },
    });
    const done = completionOf(webFetchDriver.onInteractionResponse!(call, state, rejected));
    expect(done).to.include({ isError: true, content: `The user declined to fetch ${URL}: not that site` });
    const result = branch(done.toolCall, "webFetchToolCall").result?.result;
    expect(result).to.deep.include({ case: "rejected" });
    expect(result?.value).to.include({ reason: "not that site" });
  });

  it("an empty decision, another response kind or an Exec answer before approval are protocol errors", () => {
    const { state } = queryOf(webFetchDriver.begin(call, ctx));
    expect(protocolErrorOf(webFetchDriver.onInteractionResponse!(call, state, response({ case: undefined })))).to.equal(
      "WebFetch: web_fetch_request_response has neither approved nor rejected set",
    );
    const other: InteractionResponse["result"] = {
      case: "webSearchRequestResponse",
      value: { $typeName: "agent.v1.WebSearchRequestResponse", result: { case: undefined } },
    };
    expect(protocolErrorOf(webFetchDriver.onInteractionResponse!(call, state, other))).to.equal(
      "WebFetch: expected web_fetch_request_response, got web_search_request_response",
    );
    const early = clientMessage({ case: "fetchResult", value: {} });
    expect(protocolErrorOf(webFetchDriver.onExecMessage(call, state, early))).to.equal(
      "WebFetch: the client answered an Exec it was never sent",
    );
  });

  it("after approval: another result kind or an empty fetch_result are protocol errors; an empty oneof waits", () => {
    const { state } = approve();
    expect(
      protocolErrorOf(webFetchDriver.onExecMessage(call, state, clientMessage({ case: "readResult", value: {} }))),
    ).to.equal("WebFetch: expected fetch_result but the client sent read_result");
    expect(
      protocolErrorOf(webFetchDriver.onExecMessage(call, state, clientMessage({ case: "fetchResult", value: {} }))),
    ).to.equal("WebFetch: fetch_result has no result branch set");
    expect(webFetchDriver.onExecMessage(call, state, clientMessage({ case: undefined })).kind).to.equal("wait");
    expect(protocolErrorOf(webFetchDriver.onInteractionResponse!(call, state, approved))).to.equal(
      "WebFetch: an interaction_response arrived after the approval",
    );
  });

  it("refuses a missing url and wrongly typed approval fields", () => {
    expect(webFetchDriver.started(invocation("WebFetch", {}), ctx)).to.deep.equal({
      invalid: 'Invalid arguments for WebFetch: "url" is required.',
    });
    expect(webFetchDriver.started(invocation("WebFetch", { url: URL, requestSmartModeApproval: "yes" }), ctx))
      .to.have.property("invalid")
      .that.contains('"requestSmartModeApproval" must be a boolean');
  });
});
