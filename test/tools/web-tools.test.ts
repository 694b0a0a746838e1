// WebSearch and GenerateImage drivers (docs/protocol/cursor-tools.md §5.9): an approval asks for a service call, a
// rejection is the typed terminal result, the service's answer (or failure) ends the call, and an image is written
// through write_args before the call completes.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import {
  GenerateImageRequestResponseSchema,
  type InteractionResponse,
  WebSearchRequestResponseSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { generateImageDriver } from "../../cursor/tools/generate-image.js";
import type { DriverStep } from "../../cursor/tools/types.js";
import { webSearchDriver } from "../../cursor/tools/web-search.js";
import { branch, CALL_ID, clientMessage, completionOf, ctx, execOf, invocation, protocolErrorOf } from "./helpers.js";

function serviceOf<S>(step: DriverStep<S>) {
  if (step.kind !== "service") expect.fail(`expected a service step, got ${step.kind}`);
  return step;
}
function queryState<S>(step: DriverStep<S>): S {
  if (step.kind !== "query") expect.fail(`expected a query step, got ${step.kind}`);
  return step.state;
}

const searchAnswer = (result: object): InteractionResponse["result"] => ({
  case: "webSearchRequestResponse",
  value: create(WebSearchRequestResponseSchema, { result: result as never }),
});
const imageAnswer = (result: object): InteractionResponse["result"] => ({
  case: "generateImageRequestResponse",
  value: create(GenerateImageRequestResponseSchema, { result: result as never }),
});

describe("WebSearch driver", () => {
  const call = invocation("WebSearch", { search_term: "node 20 fetch", explanation: "check" });
  const state = queryState(webSearchDriver.begin(call, ctx));

  it("asks the service after approval, and an empty search is a plain text result", () => {
    const step = serviceOf(
      webSearchDriver.onInteractionResponse!(call, state, searchAnswer({ case: "approved", value: {} })),
    );
    expect(step.request).to.deep.equal({ kind: "webSearch", query: "node 20 fetch" });
    const done = completionOf(webSearchDriver.onServiceResult!(call, state, { kind: "webSearch", references: [] }));
    expect(done).to.deep.include({ content: 'No results found for "node 20 fetch".', isError: false });
  });

  it("a service error is the card's error branch and an error text", () => {
    const done = completionOf(webSearchDriver.onServiceResult!(call, state, { kind: "error", message: "down" }));
    expect(done).to.deep.include({ content: "down", isError: true });
    expect(branch(done.toolCall, "webSearchToolCall").result?.result.case).to.equal("error");
  });

  it("an answer of another kind or without a branch is a protocol error", () => {
    expect(protocolErrorOf(webSearchDriver.onInteractionResponse!(call, state, imageAnswer({})))).to.include(
      "expected web_search_request_response",
    );
    expect(protocolErrorOf(webSearchDriver.onInteractionResponse!(call, state, searchAnswer({})))).to.include(
      "no result set",
    );
  });
});

describe("GenerateImage driver", () => {
  const png = new Uint8Array([137, 80, 78, 71]);

  it("without a filename writes a name derived from the call id, with the type's extension", () => {
    const call = invocation("GenerateImage", { description: "a cat" });
    const state = queryState(generateImageDriver.begin(call, ctx));
    const step = serviceOf(
      generateImageDriver.onInteractionResponse!(call, state, imageAnswer({ case: "approved", value: {} })),
    );
    expect(step.request).to.deep.equal({ kind: "generateImage", prompt: "a cat" });
    const write = generateImageDriver.onServiceResult!(call, state, {
      kind: "generateImage",
      data: png,
      mimeType: "image/webp",
    });
    const { request } = execOf(write);
    if (request.case !== "writeArgs") expect.fail(`expected write_args, got ${request.case}`);
    expect(request.value.path).to.match(/^generated-image-[0-9a-f]{8}\.webp$/);
    expect(request.value.toolCallId).to.equal(CALL_ID);
    expect([...request.value.fileBytes]).to.deep.equal([...png]);
  });

  it("a write that fails ends with an error naming the path", () => {
    const call = invocation("GenerateImage", { description: "a cat", filename: "cat.png", aspect_ratio: "1:1" });
    const state = queryState(generateImageDriver.begin(call, ctx));
    const { state: writing } = execOf(
      generateImageDriver.onServiceResult!(call, state, { kind: "generateImage", data: png, mimeType: "image/png" }),
    );
    const denied = clientMessage({ case: "writeResult", value: { result: { case: "noSpace", value: {} } } });
    const done = completionOf(generateImageDriver.onExecMessage(call, writing, denied));
    expect(done).to.deep.include({
      content: "The image was generated but could not be saved to cat.png: no space left on the device",
      isError: true,
    });
  });

  it("refuses an aspect ratio outside the enum", () => {
    expect(
      generateImageDriver.started(invocation("GenerateImage", { description: "x", aspect_ratio: "2:1" }), ctx),
    ).to.deep.equal({
      invalid:
        'Invalid arguments for GenerateImage: "aspect_ratio" must be one of "1:1", "4:3", "3:4", "16:9", "9:16", got "2:1".',
    });
  });
});
