// `workers.claude-code.model` runs an AEP session's Claude Code CLI on a BYOK model through the gateway's own
// /v1/messages: the real gateway process, the real CLI, an OpenAI Chat fake; a Bash turn with a permission prompt.
import { expect } from "chai";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AepClient } from "../aep/aep-client.js";
import { openSession } from "../aep/aep-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { TOKEN } from "./sse-client.js";

const MODEL = "gpt-aep";

describe("messages-api: an AEP session on a BYOK model (workers.claude-code.model)", function () {
  this.timeout(90_000);
  let fake: FakeOpenAI;
  let root: string;
  let url: string;
  const clients: AepClient[] = [];

  before(async () => {
    fake = await startFakeOpenAI();
    root = await mkdtemp(join(tmpdir(), "byok-messages-aep-"));
    const gateway = await startGatewayProcess({
      dataDir: join(root, "data"),
      config: {
        models: [
          { id: MODEL, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: "sk-aep-chat", model: "gpt-4.1" },
        ],
        anthropicEndpoint: { token: TOKEN },
        aep: { port: 0 },
        workers: { "claude-code": { model: MODEL, env: { TMPDIR: root, CLAUDE_CODE_MAX_RETRIES: "0" } } },
      },
    });
    const line = gateway.stdoutLines().find((l) => l.startsWith("byok-gateway AEP v1 listening on "));
    url = line!.slice("byok-gateway AEP v1 listening on ".length).trim();
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await killAllGateways();
    await fake?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("runs a Bash turn with a permission prompt and a final answer", async () => {
    fake.enqueue(
      { text: "Using Bash.", toolCalls: [{ id: "call_a1", name: "Bash", args: { command: "touch aep.txt" } }] },
      { text: "Created aep.txt." },
    );
    const workdir = await mkdtemp(join(root, "work-"));
    const { client } = await openSession(url, { worker: "claude-code", workdir });
    clients.push(client);
    const from = client.mark();
    client.send("input", { content: "create aep.txt" });
    const ask = await client.next("permission_request", from);
    expect(ask.event.data).to.deep.include({ tool_name: "Bash" });
    client.send("permission_response", { id: (ask.event.data as { id: string }).id, allowed: true });
    await client.next("runtime.execution.completed", from);
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    expect(existsSync(join(workdir, "aep.txt"))).to.equal(true);
    expect(fake.pending()).to.equal(0);
    expect(fake.requests[0]!.body.model).to.equal("gpt-4.1");
  });
});
