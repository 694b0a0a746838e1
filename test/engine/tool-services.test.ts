// The search and image services (engine/tool-services.ts) against a local fake HTTP server: each kind's request and
// reply shape, and every failure — slow, oversized, not JSON, cancelled — as an error result, never a throw.
import { expect } from "chai";
import { createToolServices } from "../../engine/tool-services.js";
import { type FakeUpstream, startFakeUpstream } from "../support/fake-upstream.js";

const json = (body: unknown) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const signal = () => new AbortController().signal;

describe("tool services", () => {
  let fake: FakeUpstream;
  before(async () => {
    fake = await startFakeUpstream();
  });
  after(() => fake.close());

  const search = (kind: "brave" | "searxng", timeoutMs = 5_000) =>
    createToolServices({ webSearch: { kind, baseUrl: fake.url, apiKey: "brave-key", maxResults: 2, timeoutMs } });

  it("brave: GET with the subscription token; web.results become references", async () => {
    fake.enqueue(json({ web: { results: [{ title: "T", url: "https://t", description: "D" }] } }));
    const result = await search("brave").call({ kind: "webSearch", query: "q x" }, signal());
    expect(result).to.deep.equal({ kind: "webSearch", references: [{ title: "T", url: "https://t", chunk: "D" }] });
    const sent = fake.requests.at(-1)!;
    expect(sent.url).to.equal("/res/v1/web/search?q=q+x&count=2");
    expect(sent.headers["x-subscription-token"]).to.equal("brave-key");
  });

  it("searxng: GET format=json; results become references, long extracts cut", async () => {
    fake.enqueue(json({ results: [{ title: "A", url: "https://a", content: "x".repeat(5000) }] }));
    const result = await search("searxng").call({ kind: "webSearch", query: "a" }, signal());
    if (result.kind !== "webSearch") expect.fail(`expected references, got ${JSON.stringify(result)}`);
    expect(result.references[0]!.chunk).to.have.length(2000);
    expect(fake.requests.at(-1)!.url).to.equal("/search?q=a&format=json");
  });

  it("a reply that is not JSON, or too slow, is an error result", async () => {
    fake.enqueue({ body: "<html>" });
    expect(await search("searxng").call({ kind: "webSearch", query: "a" }, signal())).to.deep.equal({
      kind: "error",
      message: "The web search (searxng) failed: the reply is not JSON",
    });
    fake.enqueue({ chunks: [{ data: "{}", delayMs: 500 }] });
    expect(await search("searxng", 100).call({ kind: "webSearch", query: "a" }, signal())).to.deep.equal({
      kind: "error",
      message: "The web search (searxng) failed: no answer within 100 ms",
    });
  });

  it("an image reply without image data is an error result", async () => {
    fake.enqueue(json({ data: [{ url: "https://img" }] }));
    const services = createToolServices({
      imageGeneration: { kind: "openai-images", baseUrl: fake.url, apiKey: "k", model: "m", timeoutMs: 5_000 },
    });
    expect(await services.call({ kind: "generateImage", prompt: "p" }, signal())).to.deep.equal({
      kind: "error",
      message: "The image generation failed: the reply carries no image (data[0].b64_json)",
    });
  });

  it("with nothing configured each call says so", async () => {
    const none = createToolServices({});
    const search = await none.call({ kind: "webSearch", query: "a" }, signal());
    const image = await none.call({ kind: "generateImage", prompt: "p" }, signal());
    expect(search)
      .to.have.property("message")
      .that.match(/^No web search provider is configured/);
    expect(image)
      .to.have.property("message")
      .that.match(/^No image generation provider is configured/);
  });
});
