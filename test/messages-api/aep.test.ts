// `workers.claude-code.model` runs an AEP session's Claude Code CLI on a BYOK model through the gateway's own
// /v1/messages: the real gateway process, the real CLI, local fakes of each endpoint kind; a Bash turn with a
// permission prompt and a final answer on each.
import { expect } from "chai";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AepClient, openSession } from "../aep/aep-client.js";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type FakeOpenAIResponses, startFakeOpenAIResponses } from "../support/fake-openai-responses.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { TOKEN } from "./sse-client.js";

describe("messages-api: AEP sessions on BYOK models (workers.claude-code.model)", function () {
  this.timeout(90_000);
  let chat: FakeOpenAI;
  let responses: FakeOpenAIResponses;
  let anthropic: FakeAnthropic;
  let root: string;
  const clients: AepClient[] = [];

  before(async () => {
    [chat, responses, anthropic] = await Promise.all([
      startFakeOpenAI(),
      startFakeOpenAIResponses(),
      startFakeAnthropic(),
    ]);
    root = await mkdtemp(join(tmpdir(), "byok-messages-aep-"));
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await killAllGateways();
    await Promise.all([chat?.close(), responses?.close(), anthropic?.close()]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** A gateway whose AEP worker runs on `model`; returns its AEP URL. */
  async function gatewayOn(model: Record<string, unknown> & { id: string }): Promise<string> {
    const gateway = await startGatewayProcess({
      dataDir: await mkdtemp(join(root, "data-")),
      config: {
        models: [model],
        // The worker's key is the gateway's own token.
        security: { token: TOKEN },
        anthropicEndpoint: {},
        aep: { port: 0, workdir: root },
        workers: { "claude-code": { model: model.id, env: { TMPDIR: root, CLAUDE_CODE_MAX_RETRIES: "0" } } },
      },
    });
    const line = gateway.stdoutLines().find((l) => l.startsWith("byok-gateway AEP v1 listening on "));
    return line!.slice("byok-gateway AEP v1 listening on ".length).trim();
  }

  /** Bash asks permission, runs, and `answer` (the model's final text) ends the turn. */
  async function bashTurn(url: string, file: string, answer: string): Promise<void> {
    const workdir = await mkdtemp(join(root, "work-"));
    const { client } = await openSession(url, { worker: "claude-code", workdir, token: TOKEN });
    clients.push(client);
    const from = client.mark();
    client.send("input", { content: `create ${file}` });
    const ask = await client.next("permission_request", from);
    expect(ask.event.data).to.deep.include({ tool_name: "Bash" });
    client.send("permission_response", { id: (ask.event.data as { id: string }).id, allowed: true });
    await client.next("runtime.execution.completed", from);
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    expect(client.of("message", from).at(-1)).to.deep.include({ role: "assistant", content: answer });
    expect(existsSync(join(workdir, file))).to.equal(true);
  }

  it("on an OpenAI Chat model", async () => {
    chat.enqueue(
      { text: "Using Bash.", toolCalls: [{ id: "call_a1", name: "Bash", args: { command: "touch chat.txt" } }] },
      { text: "Created chat.txt." },
    );
    const model = { id: "gpt-aep", provider: "openai-chat", baseUrl: chat.baseUrl, apiKey: "sk-c", model: "gpt-4.1" };
    await bashTurn(await gatewayOn(model), "chat.txt", "Created chat.txt.");
    expect(chat.pending()).to.equal(0);
    expect(chat.requests[0]!.body.model).to.equal("gpt-4.1");
  });

  it("on an OpenAI Responses model with reasoning", async () => {
    responses.enqueue(
      {
        reasoning: { id: "rs_a1", summary: ["Touch it."], encryptedContent: "gAAAAB-aep-1" },
        toolCalls: [{ callId: "call_r1", name: "Bash", args: { command: "touch resp.txt" } }],
      },
      { reasoning: { id: "rs_a2", summary: ["Done."], encryptedContent: "gAAAAB-aep-2" }, text: "Created resp.txt." },
    );
    const model = {
      id: "codex-aep",
      provider: "openai-responses",
      baseUrl: responses.baseUrl,
      apiKey: "sk-r",
      model: "gpt-5-codex",
    };
    await bashTurn(await gatewayOn(model), "resp.txt", "Created resp.txt.");
    expect(responses.pending()).to.equal(0);
    const replayed = (responses.requests[1]!.body.input as Array<Record<string, unknown>>).find(
      (i) => i.id === "rs_a1",
    );
    expect(replayed).to.deep.equal(responses.sentItems.find((i) => i.id === "rs_a1"));
  });

  it("on an Anthropic model (pass-through)", async () => {
    anthropic.enqueue(
      { blocks: [{ type: "tool_use", name: "Bash", input: { command: "touch ant.txt" } }] },
      { blocks: [{ type: "text", text: "Created ant.txt." }] },
    );
    const model = {
      id: "claude-aep",
      provider: "anthropic",
      baseUrl: anthropic.baseUrl,
      apiKey: "sk-ant-a",
      model: "claude-sonnet-4-5",
    };
    await bashTurn(await gatewayOn(model), "ant.txt", "Created ant.txt.");
    expect(anthropic.pending()).to.equal(0);
    expect(anthropic.messageRequests()[0]!.headers["x-api-key"]).to.equal("sk-ant-a");
  });
});
