// The real Claude Code CLI (pinned 2.1.328) on BYOK models through the gateway's /v1/messages: ANTHROPIC_BASE_URL
// is the real gateway process, the key is the gateway token, and local fakes answer (OpenAI Chat, OpenAI
// Responses with encrypted reasoning). Each case is a tool-using turn: Bash asks permission, runs, and the model's
// final answer ends the turn.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClaudeCodeWorkerFactory } from "../../workers/claude-code/factory.js";
import type { Worker } from "../../workers/types.js";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type FakeOpenAIResponses, startFakeOpenAIResponses } from "../support/fake-openai-responses.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { EventLog } from "../workers/cli-rig.js";
import { TOKEN } from "./sse-client.js";

const CHAT_MODEL = "gpt-e2e";
const RESPONSES_MODEL = "codex-e2e";
const ANTHROPIC_MODEL = "claude-e2e";
const ANTHROPIC_KEY = "sk-ant-provider-77f0";

describe("messages-api: the real Claude Code CLI through /v1/messages", function () {
  this.timeout(90_000);
  let chat: FakeOpenAI;
  let responses: FakeOpenAIResponses;
  let anthropic: FakeAnthropic;
  let gateway: GatewayProcess;
  let root: string;
  const workers: Worker[] = [];

  before(async () => {
    chat = await startFakeOpenAI();
    responses = await startFakeOpenAIResponses();
    anthropic = await startFakeAnthropic();
    root = await mkdtemp(join(tmpdir(), "byok-messages-cli-"));
    gateway = await startGatewayProcess({
      dataDir: join(root, "data"),
      config: {
        models: [
          { id: CHAT_MODEL, provider: "openai-chat", baseUrl: chat.baseUrl, apiKey: "sk-chat-1", model: "gpt-4.1" },
          {
            id: RESPONSES_MODEL,
            provider: "openai-responses",
            baseUrl: responses.baseUrl,
            apiKey: "sk-responses-1",
            model: "gpt-5-codex",
          },
          {
            id: ANTHROPIC_MODEL,
            provider: "anthropic",
            baseUrl: anthropic.baseUrl,
            apiKey: ANTHROPIC_KEY,
            model: "claude-sonnet-4-5",
          },
        ],
        anthropicEndpoint: { token: TOKEN },
      },
    });
  });
  after(async () => {
    for (const worker of workers) worker.kill();
    await Promise.all(workers.map((w) => w.close()));
    await killAllGateways();
    await Promise.all([chat?.close(), responses?.close(), anthropic?.close()]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  async function startClaude(model: string): Promise<{ worker: Worker; log: EventLog; workdir: string }> {
    const workdir = await mkdtemp(join(root, "work-"));
    const factory = createClaudeCodeWorkerFactory({
      env: {
        ANTHROPIC_BASE_URL: gateway.url,
        ANTHROPIC_API_KEY: TOKEN,
        ANTHROPIC_MODEL: model,
        ANTHROPIC_SMALL_FAST_MODEL: model,
        CLAUDE_CODE_MAX_RETRIES: "0",
        TMPDIR: await mkdtemp(join(root, "tmp-")),
      },
    });
    const log = new EventLog();
    const worker = factory.start({ workdir, home: workdir, resume: false, workerSessionId: randomUUID() }, (e, g) =>
      log.push(e, g),
    );
    workers.push(worker);
    return { worker, log, workdir };
  }

  /** One user turn in which the model runs `command` with Bash: permission asked and granted, then `answer`. */
  async function bashTurn(
    worker: Worker,
    log: EventLog,
    inputId: string,
    command: string,
    answer: string,
  ): Promise<void> {
    const from = log.mark();
    await worker.send({ inputId, content: `please run ${command}` });
    const ask = await log.next("interaction.requested", from);
    expect(ask.payload).to.deep.include({ tool_name: "Bash", input: { command } });
    await worker.answer(ask.id, { kind: "permission", allowed: true });
    expect(await log.next("tool.result", from)).to.deep.include({ isError: false });
    expect(await log.next("turn.finished", from)).to.deep.include({ outcome: "completed" });
    const texts = log.events(from).filter((e) => e.type === "text.completed");
    expect(texts.at(-1)).to.deep.include({ text: answer });
  }

  it("completes a Bash turn with a permission prompt on an OpenAI Chat model", async () => {
    chat.enqueue(
      { text: "Using Bash.", toolCalls: [{ id: "call_b1", name: "Bash", args: { command: "touch made.txt" } }] },
      { text: "Created made.txt." },
    );
    const { worker, log, workdir } = await startClaude(CHAT_MODEL);
    await bashTurn(worker, log, "in-1", "touch made.txt", "Created made.txt.");
    expect(existsSync(join(workdir, "made.txt"))).to.equal(true);
    expect(chat.pending()).to.equal(0);
    const [first, second] = chat.requests.map((r) => r.body);
    expect(first.model).to.equal("gpt-4.1");
    expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).to.include("Bash");
    const replayed = second.messages.slice(first.messages.length);
    expect(replayed.map((m: { role: string }) => m.role)).to.deep.equal(["assistant", "tool"]);
    expect(replayed[0].tool_calls[0]).to.deep.include({ id: "call_b1" });
    expect(replayed[1]).to.deep.include({ tool_call_id: "call_b1" });
  });

  it("keeps a Responses model's encrypted reasoning byte for byte over three Claude Code turns", async () => {
    const reasoning = (n: number) => ({
      id: `rs_${n}`,
      summary: [`Plan ${n}.`],
      encryptedContent: `gAAAAB-capsule-${n}`,
    });
    const call = (n: number) => ({ callId: `call_r${n}`, name: "Bash", args: { command: `touch r${n}.txt` } });
    for (const n of [1, 2, 3]) {
      responses.enqueue(
        { reasoning: reasoning(n * 10), toolCalls: [call(n)] },
        { reasoning: reasoning(n * 10 + 1), text: `Made r${n}.txt.` },
      );
    }
    const { worker, log, workdir } = await startClaude(RESPONSES_MODEL);
    for (const n of [1, 2, 3]) await bashTurn(worker, log, `in-${n}`, `touch r${n}.txt`, `Made r${n}.txt.`);
    expect(existsSync(join(workdir, "r3.txt"))).to.equal(true);
    expect(responses.pending()).to.equal(0);
    // The fake refuses a capsule that is not the one its output_item.done carried; the last call carries all six.
    const last = responses.requests.at(-1)!.body.input as Array<Record<string, unknown>>;
    const sentReasoning = responses.sentItems.filter((i) => i.type === "reasoning");
    expect(last.filter((i) => i.type === "reasoning")).to.deep.equal(sentReasoning.slice(0, 5));
    expect(sentReasoning).to.have.length(6);
  });

  it("passes an Anthropic model's requests through with the configured key", async () => {
    anthropic.enqueue(
      {
        blocks: [
          { type: "thinking", thinking: "Use Bash.", signature: "sig-anthropic-1" },
          { type: "tool_use", name: "Bash", input: { command: "touch a.txt" } },
        ],
      },
      { blocks: [{ type: "text", text: "Made a.txt." }] },
    );
    const { worker, log, workdir } = await startClaude(ANTHROPIC_MODEL);
    await bashTurn(worker, log, "in-1", "touch a.txt", "Made a.txt.");
    expect(existsSync(join(workdir, "a.txt"))).to.equal(true);
    expect(anthropic.pending()).to.equal(0);
    const [first, second] = anthropic.messageRequests();
    expect(first!.headers["x-api-key"]).to.equal(ANTHROPIC_KEY);
    expect(first!.body.model).to.equal("claude-sonnet-4-5");
    const assistant = second!.body.messages.at(-2);
    expect(assistant.content[0]).to.deep.equal({
      type: "thinking",
      thinking: "Use Bash.",
      signature: "sig-anthropic-1",
    });
  });
});
