// A gateway killed inside a tool round's settled checkpoint (docs/protocol/cursor-run.md §5.2, §11): the round's last
// tool result and the settled checkpoint commit in one transaction before the checkpoint's blobs are SET, so a kill
// while the client has not acknowledged them leaves a store whose head is one checkpoint ahead of anything published.
// Nothing reads that head as the client's truth: the client comes back with the staged checkpoint it holds, the round
// runs again, and the conversation goes on prefix-stable with nothing lost or doubled in the provider's history.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../store/index.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import { waitUntil } from "../support/util.js";

const MODEL_ID = "byok-e2e-restart-round";
const ANSWER = "It says hi.";

interface ChatBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>;
}

describe("e2e: SIGKILL between a settled checkpoint's commit and its publish", function () {
  this.timeout(45_000);
  let fake: FakeOpenAI;
  let dataDir: string;

  before(async () => {
    fake = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-restart-round-"));
  });
  after(async () => {
    await killAllGateways();
    await fake?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const startGateway = () =>
    startGatewayProcess({
      dataDir,
      config: {
        models: [{ id: MODEL_ID, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: "sk-e2e", model: "m" }],
      },
      upstream: "http://127.0.0.1:9",
    });

  it("the client resumes from its staged checkpoint on the same store, and the round runs again", async () => {
    const conversationId = `conv-restart-round-${randomUUID()}`;
    const workspace = createWorkspace({ "notes.txt": "hi\n" });
    fake.enqueue({ text: "Let me look.", toolCalls: [{ id: "call_r1", name: "Read", args: { path: "notes.txt" } }] });
    const gw1 = await startGateway();
    // Every SET after the staged checkpoint is held: the settled checkpoint is committed, never acknowledged.
    const never = new Promise<void>(() => {});
    const first = new CursorClient(gw1.url, {
      workspace,
      hooks: {
        onKv: (kv, { run }) =>
          kv.message.case === "setBlobArgs" && run.checkpoints.length ? { holdUntil: never } : undefined,
      },
    });
    const run1 = first.startRun({ conversationId, modelId: MODEL_ID, text: "what is in notes.txt?" });
    const settledSetSent = () => run1.kinds().lastIndexOf("kv_set") > run1.kinds().indexOf("tool_call_completed");
    await waitUntil(
      () => run1.kinds().includes("tool_call_completed") && settledSetSent(),
      20_000,
      () => `frames so far: ${run1.kinds().join(", ")}`,
    );
    expect(await gw1.stop("SIGKILL")).to.deep.equal({ code: null, signal: "SIGKILL" });
    expect(run1.checkpoints, "only the staged checkpoint was published").to.have.length(1);
    const staged = run1.lastCheckpoint()!;
    expect(staged.pendingToolCalls).to.have.length(1);

    // The store is ahead of the client: the result and the settled head (revision 2) are durable.
    const store = await openStore({ dataDir });
    try {
      expect((await store.getHead(conversationId))?.revision).to.equal(2);
      const tool = (await store.loadMessages(conversationId)).filter((m) => m.role === "tool");
      expect(tool.map((m) => JSON.parse(m.body).content)).to.deep.equal(["hi\n"]);
    } finally {
      await store.close();
    }

    const gw2 = await startGateway();
    const client = new CursorClient(gw2.url, { workspace });
    for (const data of first.blobs.values()) client.putBlob(data);
    fake.enqueue({ text: ANSWER });
    const run2 = client.startRun({ conversationId, modelId: MODEL_ID, resume: true, checkpoint: staged });
    expect(await run2.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(run2.frames);
    expect(client.violations()).to.deep.equal([]);
    expect(
      run2.kinds().filter((k) => k === "exec:read_args"),
      "the round ran again",
    ).to.have.length(1);
    await gw2.stop();

    // The provider saw the first request, then exactly it plus the batch and its one result.
    const [before, after] = fake.requests.slice(-2).map((r) => r.body as ChatBody);
    expect(JSON.stringify(after!.messages.slice(0, before!.messages.length))).to.equal(
      JSON.stringify(before!.messages),
    );
    const added = after!.messages.slice(before!.messages.length);
    expect(added.map((m) => m.role)).to.deep.equal(["assistant", "tool"]);
    expect(added[1]).to.deep.include({ tool_call_id: "call_r1", content: "hi\n" });
    const last = run2.lastCheckpoint()!;
    expect(last.pendingToolCalls).to.deep.equal([]);
    expect(last.rootPromptMessagesJson).to.have.length(staged.rootPromptMessagesJson.length + 3);
  });
});
