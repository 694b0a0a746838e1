// The real Claude Code CLI (pinned 2.1.328) on a BYOK model through the gateway's /v1/messages: ANTHROPIC_BASE_URL
// is the real gateway process, the key is the gateway token, and an OpenAI Chat fake answers. One tool-using turn:
// Bash asks permission, runs, and the model's final answer ends the turn.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClaudeCodeWorkerFactory } from "../../workers/claude-code/factory.js";
import type { Worker } from "../../workers/types.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { EventLog } from "../workers/cli-rig.js";
import { TOKEN } from "./sse-client.js";

const MODEL = "gpt-e2e";

describe("messages-api: the real Claude Code CLI through /v1/messages", function () {
  this.timeout(90_000);
  let fake: FakeOpenAI;
  let gateway: GatewayProcess;
  let root: string;
  const workers: Worker[] = [];

  before(async () => {
    fake = await startFakeOpenAI();
    root = await mkdtemp(join(tmpdir(), "byok-messages-cli-"));
    gateway = await startGatewayProcess({
      dataDir: join(root, "data"),
      config: {
        models: [{ id: MODEL, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: "sk-chat-1", model: "gpt-4.1" }],
        anthropicEndpoint: { token: TOKEN },
      },
    });
  });
  after(async () => {
    for (const worker of workers) worker.kill();
    await Promise.all(workers.map((w) => w.close()));
    await killAllGateways();
    await fake?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("completes a Bash turn with a permission prompt on an OpenAI Chat model", async () => {
    const workdir = await mkdtemp(join(root, "work-"));
    const factory = createClaudeCodeWorkerFactory({
      env: {
        ANTHROPIC_BASE_URL: gateway.url,
        ANTHROPIC_API_KEY: TOKEN,
        ANTHROPIC_MODEL: MODEL,
        ANTHROPIC_SMALL_FAST_MODEL: MODEL,
        CLAUDE_CODE_MAX_RETRIES: "0",
        TMPDIR: await mkdtemp(join(root, "tmp-")),
      },
    });
    fake.enqueue(
      { text: "Using Bash.", toolCalls: [{ id: "call_b1", name: "Bash", args: { command: "touch made.txt" } }] },
      { text: "Created made.txt." },
    );
    const log = new EventLog();
    const worker = factory.start({ workdir, home: workdir, resume: false, workerSessionId: randomUUID() }, (e, g) =>
      log.push(e, g),
    );
    workers.push(worker);
    await worker.send({ inputId: "in-1", content: "create made.txt" });
    const ask = await log.next("interaction.requested");
    expect(ask.payload).to.deep.include({ tool_name: "Bash", input: { command: "touch made.txt" } });
    await worker.answer(ask.id, { kind: "permission", allowed: true });
    expect(await log.next("tool.result")).to.deep.include({ isError: false });
    const finished = await log.next("turn.finished");
    expect(finished).to.deep.include({ outcome: "completed" });
    expect(existsSync(join(workdir, "made.txt"))).to.equal(true);
    expect(fake.pending()).to.equal(0);
    const [first, second] = fake.requests.map((r) => r.body);
    expect(first.model).to.equal("gpt-4.1");
    expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).to.include("Bash");
    const replayed = second.messages.slice(first.messages.length);
    expect(replayed.map((m: { role: string }) => m.role)).to.deep.equal(["assistant", "tool"]);
    expect(replayed[0].tool_calls[0]).to.deep.include({ id: "call_b1" });
    expect(replayed[1]).to.deep.include({ tool_call_id: "call_b1" });
  });
});
