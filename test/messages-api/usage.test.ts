// The endpoint's token usage in the status API's ledger (GET /__byok/api/usage, front door `messages`), on the real
// gateway process: an OpenAI Chat call through the adapter, and Anthropic pass-through calls, streamed and not,
// whose usage is read while their answer is forwarded untouched.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { post, sseEvents, TOKEN } from "./sse-client.js";

describe("messages-api: usage per model in the status API", function () {
  this.timeout(30_000);
  let chat: FakeOpenAI;
  let anthropic: FakeAnthropic;
  let gateway: GatewayProcess;
  let dataDir: string;

  before(async () => {
    [chat, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
    dataDir = await mkdtemp(join(tmpdir(), "byok-messages-usage-"));
    gateway = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          { id: "gpt-u", provider: "openai-chat", baseUrl: chat.baseUrl, apiKey: "sk-c-1", model: "gpt-4.1" },
          { id: "claude-u", provider: "anthropic", baseUrl: anthropic.baseUrl, apiKey: "sk-a-1", model: "claude-x" },
        ],
        anthropicEndpoint: { token: TOKEN },
      },
    });
  });
  after(async () => {
    await killAllGateways();
    await Promise.all([chat?.close(), anthropic?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("sums adapter and pass-through calls per provider model; count_tokens is not a call", async () => {
    const url = `${gateway.url}/v1/messages`;
    const messages = [{ role: "user", content: "hi" }];
    chat.enqueue({
      text: "ok",
      usage: { prompt_tokens: 50, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 40 } },
    });
    expect((await post(url, { model: "gpt-u", max_tokens: 10, stream: true, messages })).status).to.equal(200);

    anthropic.enqueue({
      blocks: [{ type: "text", text: "streamed" }],
      usage: { input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 3, cache_read_input_tokens: 20 },
    });
    const streamed = await post(url, { model: "claude-u", max_tokens: 10, stream: true, messages });
    // Forwarded untouched: the client sees Anthropic's own counts.
    const delta = (await sseEvents(streamed.text)).find((e) => e.event === "message_delta");
    expect(delta?.data.usage).to.deep.equal({ output_tokens: 5 });
    anthropic.enqueueUnstreamed({
      blocks: [{ type: "text", text: "whole" }],
      usage: { input_tokens: 100, output_tokens: 9, cache_read_input_tokens: 1 },
    });
    const whole = await post(url, { model: "claude-u", max_tokens: 10, messages });
    expect(JSON.parse(whole.text).usage).to.deep.include({ input_tokens: 100, output_tokens: 9 });
    expect((await post(`${url}/count_tokens`, { model: "claude-u", messages })).status).to.equal(200);

    const usage = (await (await fetch(`${gateway.url}/__byok/api/usage?days=1`)).json()) as {
      rows: Array<{ frontDoor: string; model: string; calls: number }>;
    };
    const day = new Date().toISOString().slice(0, 10);
    expect(usage.rows.sort((a, b) => a.model.localeCompare(b.model))).to.deep.equal([
      // input is the whole prompt: Anthropic's input_tokens plus cache reads and writes.
      row("claude-x", { calls: 2, input: 136, output: 14, cacheRead: 21, cacheWrite: 3 }),
      row("gpt-4.1", { calls: 1, input: 50, output: 7, cacheRead: 40, cacheWrite: 0 }),
    ]);
    function row(
      model: string,
      t: { calls: number; input: number; output: number; cacheRead: number; cacheWrite: number },
    ) {
      return { frontDoor: "messages", model, day, ...t, cacheHitShare: t.cacheRead / t.input };
    }
    const logged = await gateway.loggedLines((l) => l.includes('"messages usage"'), 3);
    expect(logged.map((l) => JSON.parse(l).configured_model)).to.deep.equal(["gpt-u", "claude-u", "claude-u"]);
  });
});
