// Wire-level e2e: WebSearch and GenerateImage (docs/protocol/cursor-tools.md §5.9). The user approves through an
// interaction_query; the approved call runs on the configured search / image service (local fake HTTP servers here),
// and the generated image reaches the workspace through an ordinary write_args Exec. Without a configured service the
// approved call ends with an error the model reads, never a hang.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import {
  GenerateImageRequestResponseSchema,
  type InteractionQuery,
  type InteractionResponse,
  WebSearchRequestResponseSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { type FakeUpstream, startFakeUpstream } from "../support/fake-upstream.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  SETTLED_ROUND_THEN_ANSWER,
  updates,
  useToolsRig,
} from "./tools-kit.js";

const SEARCH_KEY = "tvly-e2e-search-key-0123456789";
const IMAGE_KEY = "sk-e2e-image-key-0123456789";
/** A 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==",
  "base64",
);

const staged = (query: string) => [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
  "tool_call_started",
  `query:${query}`,
];

type Answer = "approved" | { rejected: string };
const searchAnswer = (a: Answer) =>
  ({
    case: "webSearchRequestResponse",
    value: create(WebSearchRequestResponseSchema, {
      result: a === "approved" ? { case: "approved", value: {} } : { case: "rejected", value: { reason: a.rejected } },
    }),
  }) as InteractionResponse["result"];
const imageAnswer = (a: Answer) =>
  ({
    case: "generateImageRequestResponse",
    value: create(GenerateImageRequestResponseSchema, {
      result: a === "approved" ? { case: "approved", value: {} } : { case: "rejected", value: { reason: a.rejected } },
    }),
  }) as InteractionResponse["result"];

const json = (body: unknown, status = 200) => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

const search = { id: "call_ws_1", name: "WebSearch", args: { search_term: "xstate v5 invoke" } };
const image = {
  id: "call_img_1",
  name: "GenerateImage",
  args: { description: "a red square", filename: "art/red.png", aspect_ratio: "16:9" },
};

function card<C extends string>(run: Parameters<typeof updates>[0], kind: C) {
  const [completed] = updates(run, "toolCallCompleted");
  const tool = completed!.toolCall!.tool;
  if (tool.case !== kind) expect.fail(`expected a ${kind} card, got ${tool.case}`);
  return tool.value as { result?: { result: { case: string; value: unknown } } };
}

describe("e2e tools: WebSearch and GenerateImage with configured services", function () {
  this.timeout(15_000);
  let service: FakeUpstream;
  before(async () => {
    service = await startFakeUpstream();
  });
  after(() => service.close());
  const rig = useToolsRig("tools-web", () => ({
    webSearch: { kind: "tavily", baseUrl: service.url, apiKey: SEARCH_KEY, maxResults: 3 },
    imageGeneration: { kind: "openai-images", baseUrl: `${service.url}/v1`, apiKey: IMAGE_KEY, model: "gpt-image-1" },
  }));

  it("WebSearch: approved, searched on the configured service, references in the card and the text result", async () => {
    const before = service.requests.length;
    service.enqueue(
      json({ results: [{ title: "Invoking actors", url: "https://stately.ai/docs/invoke", content: "Use invoke." }] }),
    );
    const fake = await rig.fake({ text: "Searching.", toolCalls: [search] }, { text: "Found it." });
    const asked: InteractionQuery[] = [];
    const { client, run } = rig.start(fake, {
      text: "how do I invoke an actor?",
      hooks: { onInteraction: (q) => (asked.push(q), searchAnswer("approved")) },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...staged("web_search_request_query"),
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const query = asked[0]!.query;
    if (query.case !== "webSearchRequestQuery") expect.fail(`expected a web search query, got ${query.case}`);
    expect(query.value.args).to.deep.include({ searchTerm: "xstate v5 invoke", toolCallId: "call_ws_1" });

    const [sent] = service.requests.slice(before);
    expect(sent).to.deep.include({ method: "POST", url: "/search" });
    expect(sent!.headers.authorization).to.equal(`Bearer ${SEARCH_KEY}`);
    expect(JSON.parse(sent!.body.toString())).to.deep.equal({ query: "xstate v5 invoke", max_results: 3 });

    const result = card(run, "webSearchToolCall").result!.result;
    expect(result.case).to.equal("success");
    expect((result.value as { references: unknown[] }).references).to.deep.equal([
      {
        $typeName: "agent.v1.WebSearchReference",
        title: "Invoking actors",
        url: "https://stately.ai/docs/invoke",
        chunk: "Use invoke.",
      },
    ]);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.equal({
      role: "tool",
      tool_call_id: "call_ws_1",
      content: "1. Invoking actors\nURL: https://stately.ai/docs/invoke\nUse invoke.",
    });
  });

  it("WebSearch: a rejected approval is the typed rejected result, and nothing is searched", async () => {
    const before = service.requests.length;
    const fake = await rig.fake({ text: "Searching.", toolCalls: [search] }, { text: "I will answer from memory." });
    const { client, run } = rig.start(fake, {
      text: "how do I invoke an actor?",
      hooks: { onInteraction: () => searchAnswer({ rejected: "not now" }) },
    });
    await run.done;
    expect(run.kinds()).to.deep.equal([
      ...staged("web_search_request_query"),
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(service.requests.length).to.equal(before);
    const result = card(run, "webSearchToolCall").result!.result;
    expect(result).to.deep.include({ case: "rejected" });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ content: "The user rejected the web search: not now" });
  });

  it("WebSearch: a service that refuses is an error result that never quotes the key", async () => {
    service.enqueue(json({ error: `invalid key ${SEARCH_KEY}` }, 401));
    const fake = await rig.fake({ text: "Searching.", toolCalls: [search] }, { text: "The search failed." });
    const { client, run } = rig.start(fake, {
      text: "how do I invoke an actor?",
      hooks: { onInteraction: () => searchAnswer("approved") },
    });
    await run.done;
    assertCleanSuccess(run, client);
    const result = card(run, "webSearchToolCall").result!.result;
    expect(result.case).to.equal("error");
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!) as Array<{ content: string }>;
    expect(added[1]!.content).to.match(/^The web search \(tavily\) failed: HTTP 401/);
    expect(added[1]!.content).to.not.include(SEARCH_KEY);
    expect(rig.gw.stderrLines().join("\n")).to.not.include(SEARCH_KEY);
  });

  it("GenerateImage: approved, generated by the image service, written through write_args, shown in the card", async () => {
    const before = service.requests.length;
    service.enqueue(json({ data: [{ b64_json: PNG.toString("base64") }], output_format: "png" }));
    const fake = await rig.fake({ text: "Drawing.", toolCalls: [image] }, { text: "Done." });
    const { client, run } = rig.start(fake, {
      text: "draw a red square",
      hooks: { onInteraction: () => imageAnswer("approved") },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...staged("generate_image_request_query"),
      "exec:write_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const [sent] = service.requests.slice(before);
    expect(sent).to.deep.include({ method: "POST", url: "/v1/images/generations" });
    expect(sent!.headers.authorization).to.equal(`Bearer ${IMAGE_KEY}`);
    expect(JSON.parse(sent!.body.toString())).to.deep.equal({
      model: "gpt-image-1",
      prompt: "a red square",
      n: 1,
      size: "1536x1024",
    });
    const [write] = execs(run);
    const args = write!.value as { path: string; fileBytes: Uint8Array; toolCallId: string };
    expect(args.path).to.equal("art/red.png");
    expect(Buffer.from(args.fileBytes).equals(PNG)).to.equal(true);
    expect(args.toolCallId).to.equal("call_img_1");
    const result = card(run, "generateImageToolCall").result!.result;
    expect(result.case).to.equal("success");
    expect(result.value).to.deep.include({ filePath: "art/red.png", imageData: PNG.toString("base64") });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ content: "Generated the image and saved it to art/red.png." });
  });

  it("GenerateImage: a rejected approval ends the call with the typed error result, nothing generated", async () => {
    const before = service.requests.length;
    const fake = await rig.fake({ text: "Drawing.", toolCalls: [image] }, { text: "Understood." });
    const { client, run } = rig.start(fake, {
      text: "draw a red square",
      hooks: { onInteraction: () => imageAnswer({ rejected: "no images" }) },
    });
    await run.done;
    expect(run.kinds()).to.deep.equal([
      ...staged("generate_image_request_query"),
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(service.requests.length).to.equal(before);
    const result = card(run, "generateImageToolCall").result!.result;
    expect(result).to.deep.include({ case: "error" });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ content: "The user rejected the image generation: no images" });
  });
});

describe("e2e tools: WebSearch and GenerateImage without configured services", function () {
  this.timeout(15_000);
  const rig = useToolsRig("tools-web-none");

  for (const [tool, query, answer, says] of [
    [search, "web_search_request_query", searchAnswer, "No web search provider is configured"],
    [image, "generate_image_request_query", imageAnswer, "No image generation provider is configured"],
  ] as const) {
    it(`${tool.name}: approved with no service configured ends with an error the model reads`, async () => {
      const fake = await rig.fake({ text: "Trying.", toolCalls: [tool] }, { text: "Not available here." });
      const { client, run } = rig.start(fake, { text: "go", hooks: { onInteraction: () => answer("approved") } });
      await run.done;
      expect(run.kinds()).to.deep.equal([...staged(query), "tool_call_completed", ...SETTLED_ROUND_THEN_ANSWER]);
      assertCleanSuccess(run, client);
      const added = assertPrefix(fake.requests[0]!, fake.requests[1]!) as Array<{ content: string }>;
      expect(added[1]!.content).to.include(says);
    });
  }
});
