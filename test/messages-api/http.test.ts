// POST /v1/messages on the real gateway process, carried out by an OpenAI Chat model on a local fake: streaming
// text and tool_use, the non-streaming form, count_tokens, and every kind of bad input answered with an Anthropic
// error object while the gateway stays up. The provider key and the gateway token are never echoed.
import { expect } from "chai";
import { countTokens as countO200k } from "gpt-tokenizer/encoding/o200k_base";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { post, sseEvents, TOKEN } from "./sse-client.js";

const PROVIDER_KEY = "sk-provider-secret-8d2f";
const MODEL = "gpt-e2e";

describe("messages-api: /v1/messages over HTTP on an OpenAI Chat model", function () {
  this.timeout(30_000);
  let fake: FakeOpenAI;
  let gateway: GatewayProcess;
  let dataDir: string;
  let url: string;

  before(async () => {
    fake = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), "byok-messages-"));
    gateway = await startGatewayProcess({
      dataDir,
      config: {
        models: [{ id: MODEL, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: PROVIDER_KEY, model: "gpt-4.1" }],
        // The gateway's token is the endpoint's: no override in anthropicEndpoint.
        security: { token: TOKEN },
        anthropicEndpoint: { models: { "claude-haiku-4-5": MODEL }, maxBodyBytes: 200_000 },
      },
    });
    url = `${gateway.url}/v1/messages`;
  });
  after(async () => {
    await killAllGateways();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  afterEach(() => {
    expect(fake.pending(), "every scripted turn was consumed").to.equal(0);
    for (const line of gateway.stderrLines()) {
      expect(line).not.to.include(PROVIDER_KEY);
      expect(line).not.to.include(TOKEN);
    }
  });

  const base = { model: MODEL, max_tokens: 1024, stream: true };

  it("streams text and a tool call, then takes the tool result back", async () => {
    fake.enqueue({
      text: "Listing.",
      toolCalls: [{ id: "call_1", name: "Bash", args: { command: "ls" } }],
      usage: { prompt_tokens: 50, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 40 } },
      chunkSize: 4,
    });
    const tools = [{ name: "Bash", description: "Run a command", input_schema: { type: "object" } }];
    const first = await post(`${url}?beta=true`, {
      ...base,
      system: [{ type: "text", text: "You are terse." }],
      tools,
      messages: [{ role: "user", content: "list files" }],
    });
    expect(first.status).to.equal(200);
    expect(first.headers.get("content-type")).to.equal("text/event-stream");
    const events = await sseEvents(first.text);
    expect(events.map((e) => e.event)).to.deep.equal([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      ...Array<string>(4).fill("content_block_delta"),
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const input = events
      .filter((e) => e.event === "content_block_delta" && e.data.index === 1)
      .map((e) => (e.data.delta as { partial_json: string }).partial_json)
      .join("");
    expect(JSON.parse(input)).to.deep.equal({ command: "ls" });
    expect(events.at(-2)!.data).to.deep.equal({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 10, output_tokens: 7, cache_read_input_tokens: 40 },
    });
    const sent = fake.requests[0]!;
    expect(sent.headers.authorization).to.equal(`Bearer ${PROVIDER_KEY}`);
    expect(sent.body.messages[0]).to.deep.equal({ role: "system", content: "You are terse." });
    expect(sent.body.max_completion_tokens).to.equal(1024);

    fake.enqueue({ text: "Two files.", usage: { prompt_tokens: 70, completion_tokens: 3 } });
    const second = await post(url, {
      ...base,
      stream: false,
      tools,
      messages: [
        { role: "user", content: "list files" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Listing." },
            { type: "tool_use", id: "call_1", name: "Bash", input: { command: "ls" } },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: "a\nb" }] },
      ],
    });
    expect(second.status).to.equal(200);
    expect(JSON.parse(second.text)).to.deep.include({
      type: "message",
      role: "assistant",
      model: MODEL,
      content: [{ type: "text", text: "Two files." }],
      stop_reason: "end_turn",
      usage: { input_tokens: 70, output_tokens: 3 },
    });
    expect(fake.requests[1]!.body.messages.slice(1)).to.deep.equal([
      { role: "user", content: "list files" },
      {
        role: "assistant",
        content: "Listing.",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "Bash", arguments: '{"command":"ls"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "a\nb" },
    ]);
    const usageLines = await gateway.loggedLines((l) => l.includes('"messages usage"'), 2);
    expect(JSON.parse(usageLines[0]!)).to.deep.include({ model: MODEL, inputTokens: 50, cacheReadTokens: 40 });
  });

  it("maps a client model name through anthropicEndpoint.models and reports max_tokens", async () => {
    fake.enqueue({ text: "cut", finish: "length" });
    const answer = await post(url, { ...base, model: "claude-haiku-4-5", messages: [{ role: "user", content: "hi" }] });
    const events = await sseEvents(answer.text);
    expect(events[0]!.data).to.deep.nested.include({ "message.model": "claude-haiku-4-5" });
    expect(events.at(-2)!.data).to.deep.nested.include({ "delta.stop_reason": "max_tokens" });
  });

  it("returns reasoning_content as signed thinking, restores it on the next call, drops a forged one", async () => {
    fake.enqueue({
      reasoning: "Think: ls is enough.",
      text: "Use ls.",
      usage: { prompt_tokens: 9, completion_tokens: 4 },
    });
    const first = await post(url, { ...base, stream: false, messages: [{ role: "user", content: "how?" }] });
    const message = JSON.parse(first.text) as { content: Array<Record<string, string>> };
    expect(message.content.map((b) => b.type)).to.deep.equal(["thinking", "text", "redacted_thinking"]);
    expect(message.content[0]).to.deep.include({ thinking: "Think: ls is enough." });
    const history = (content: unknown) => [
      { role: "user", content: "how?" },
      { role: "assistant", content },
      { role: "user", content: "and then?" },
    ];
    fake.enqueue({ text: "Then stop." }, { text: "Then stop." });
    await post(url, { ...base, messages: history(message.content) });
    const forged = message.content.map((b) =>
      b.type === "redacted_thinking" ? { ...b, data: b.data!.replace(/\.[^.]+$/, ".Zm9yZ2Vk") } : b,
    );
    const answer = await post(url, { ...base, messages: history(forged) });
    expect(answer.status).to.equal(200);
    const [restored, dropped] = fake.requests.slice(-2).map((r) => r.body.messages[2]);
    expect(restored).to.deep.equal({
      role: "assistant",
      content: "Use ls.",
      reasoning_content: "Think: ls is enough.",
    });
    expect(dropped).to.deep.equal({ role: "assistant", content: "Use ls." });
  });

  it("carries user and tool-result images, tool_choice and stop_sequences to the provider in its own shape", async () => {
    fake.enqueue({ toolCalls: [{ id: "call_i", name: "Bash", args: { command: "file a.png" } }] });
    const answer = await post(url, {
      ...base,
      tools: [{ name: "Bash", input_schema: { type: "object" } }],
      tool_choice: { type: "tool", name: "Bash" },
      stop_sequences: ["\n\nEND"],
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            { type: "text", text: "what is it?" },
          ],
        },
      ],
    });
    expect(answer.status).to.equal(200);
    const sent = fake.requests.at(-1)!.body;
    expect(sent.messages[1]).to.deep.equal({
      role: "user",
      content: [
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        { type: "text", text: "what is it?" },
      ],
    });
    expect(sent.tool_choice).to.deep.equal({ type: "function", function: { name: "Bash" } });
    expect(sent.stop).to.deep.equal(["\n\nEND"]);

    // An image a tool returned (Read on a picture) follows the round's results as a user message on Chat.
    fake.enqueue({ text: "A tiny PNG." });
    const png = { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" };
    const withResult = await post(url, {
      ...base,
      messages: [
        { role: "user", content: "read a.png" },
        { role: "assistant", content: [{ type: "tool_use", id: "call_p", name: "Read", input: { path: "a.png" } }] },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "call_p", content: [{ type: "image", source: png }] }],
        },
      ],
    });
    expect(withResult.status).to.equal(200);
    expect(fake.requests.at(-1)!.body.messages.slice(3)).to.deep.equal([
      { role: "tool", tool_call_id: "call_p", content: "" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] },
    ]);
  });

  it("counts tokens without calling the provider", async () => {
    const answer = await post(`${url}/count_tokens`, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(answer.status).to.equal(200);
    // gpt-4.1 is counted with its own encoding (o200k_base): one token of text and three overheads of three.
    expect(JSON.parse(answer.text)).to.deep.equal({ input_tokens: countO200k("hi") + 9 });
  });

  const errorOf = (text: string) => JSON.parse(text) as { type: string; error: { type: string; message: string } };

  it("refuses a missing or wrong token with 401 authentication_error; Bearer works", async () => {
    const body = { ...base, messages: [{ role: "user", content: "hi" }] };
    const missing = await fetch(url, { method: "POST", body: JSON.stringify(body) });
    expect(missing.status).to.equal(401);
    expect(errorOf(await missing.text()).error.type).to.equal("authentication_error");
    const wrong = await post(url, body, { "x-api-key": "nope" });
    expect([wrong.status, errorOf(wrong.text).error.type]).to.deep.equal([401, "authentication_error"]);
    fake.enqueue({ text: "ok" });
    const bearer = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });
    expect(bearer.status).to.equal(200);
    await bearer.text();
  });

  it("answers bad input with invalid_request_error, not_found_error and request_too_large", async () => {
    const unknown = await post(url, { ...base, model: "claude-opus-9", messages: [{ role: "user", content: "x" }] });
    expect([unknown.status, errorOf(unknown.text).error]).to.deep.equal([
      404,
      { type: "not_found_error", message: "model: claude-opus-9" },
    ]);
    const malformed = await post(url, '{"model": ');
    expect([malformed.status, errorOf(malformed.text).error.type]).to.deep.equal([400, "invalid_request_error"]);
    const invalid = await post(url, { model: MODEL, messages: [] });
    expect([invalid.status, errorOf(invalid.text).error.type]).to.deep.equal([400, "invalid_request_error"]);
    const orphan = await post(url, {
      ...base,
      messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "?" }] }],
    });
    expect(orphan.status).to.equal(400);
    expect(errorOf(orphan.text).error.message).to.include("toolu_x");
    const huge = await post(url, { ...base, messages: [{ role: "user", content: "x".repeat(300_000) }] });
    expect([huge.status, errorOf(huge.text).error.type]).to.deep.equal([413, "request_too_large"]);
    // The gateway's other routes, and other methods on the endpoint's paths, still want it as x-byok-token.
    expect((await fetch(`${gateway.url}/__byok/health`)).status).to.equal(401);
    expect((await fetch(url, { headers: { "x-api-key": TOKEN } })).status).to.equal(401);
    const health = await fetch(`${gateway.url}/__byok/health`, { headers: { "x-byok-token": TOKEN } });
    expect(health.status).to.equal(200);
  });

  it("maps provider failures to Anthropic errors and a mid-stream failure to an error event", async () => {
    const body = { ...base, messages: [{ role: "user", content: "hi" }] };
    for (const [status, type] of [
      [429, "rate_limit_error"],
      [503, "overloaded_error"],
      [500, "api_error"],
      [401, "api_error"],
    ] as const) {
      fake.enqueue({ status, body: JSON.stringify({ error: { message: `failed with ${PROVIDER_KEY}` } }) });
      const answer = await post(url, body);
      const error = errorOf(answer.text);
      expect([answer.status, error.error.type]).to.deep.equal([
        status === 401 ? 500 : status === 503 ? 529 : status,
        type,
      ]);
      expect(answer.text).not.to.include(PROVIDER_KEY);
    }
    fake.enqueue({ bareEof: true, text: "partial" });
    const cut = await post(url, body);
    expect(cut.status).to.equal(200);
    const events = await sseEvents(cut.text);
    expect(events.at(-1)).to.deep.nested.include({
      event: "error",
      "data.type": "error",
      "data.error.type": "api_error",
    });
  });
});
