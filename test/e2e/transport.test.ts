import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";

const MODEL = "byok-e2e";

describe("explore", () => {
  let dataDir: string;
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-transport-"));
    openai = await startFakeOpenAI();
    upstream = await startFakeUpstream();
    gw = await startGatewayProcess({
      dataDir,
      config: { models: [{ id: MODEL, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-e2e", model: "gpt-e2e" }] },
      upstream: upstream.url,
    });
  });
  after(async () => {
    await killAllGateways();
    await openai.close();
    await upstream.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("read", async () => {
    openai.enqueue({ toolCalls: [{ id: "call_r", name: "Read", args: { path: "a.txt" } }] }, { text: "done" });
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.txt": "hello\n" }) });
    const run = client.startRun({ conversationId: "x-1", modelId: MODEL, text: "read" });
    console.log(await run.done);
    console.log(run.kinds());
    assertEndStreamInvariants(run.frames);
  });
  it("text", async () => {
    openai.enqueue({ text: "hi" });
    const client = new CursorClient(gw.url);
    const run = client.startRun({ conversationId: "x-2", modelId: MODEL, text: "hi" });
    console.log(await run.done);
    console.log(run.kinds(), run.frames.map((f) => f.kind === "message" && f.compressed));
  });
  it("shell", async () => {
    openai.enqueue({ toolCalls: [{ id: "call_s", name: "Shell", args: { command: "echo hello" } }] }, { text: "done" });
    const client = new CursorClient(gw.url, { shell: () => [{ stdout: "hello\n" }, { exit: 0, delayMs: 300 }] });
    const run = client.startRun({ conversationId: "x-3", modelId: MODEL, text: "sh" });
    console.log(await run.done);
    console.log(run.kinds());
    console.log(JSON.stringify(openai.requests[openai.requests.length - 1]!.body.messages.slice(-2)));
  });
});
