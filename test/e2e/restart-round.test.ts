// A gateway killed inside a tool round's settled checkpoint (docs/protocol/cursor-run.md §5.2, §11): the round's last
// tool result and the settled checkpoint commit in one transaction before the checkpoint's blobs are SET, so a kill
// while the client has not acknowledged them leaves a store whose head is one checkpoint ahead of anything published.
// Nothing reads that head as the client's truth: the client comes back with the staged checkpoint it holds, the round
// runs again, and the conversation goes on prefix-stable with nothing lost or doubled in the provider's history.
import { expect } from "chai";
import { useStoreGateway } from "./store-gateway-kit.js";
import { randomUUID } from "node:crypto";
import { openStore } from "../../store/index.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import { waitUntil } from "../support/util.js";

const MODEL_ID = "byok-e2e-restart-round";
const ANSWER = "It says hi.";

interface ChatBody {
  messages: Array<{ role: string; content: unknown; tool_call_id?: string }>;
}

describe("e2e: SIGKILL between a settled checkpoint's commit and its publish", function () {
  this.timeout(45_000);
  const rig = useStoreGateway("restart-round", { id: MODEL_ID, apiKey: "sk-e2e" });

  it("the client resumes from its staged checkpoint on the same store, and the round runs again", async () => {
    const conversationId = `conv-restart-round-${randomUUID()}`;
    const workspace = createWorkspace({ "notes.txt": "hi\n" });
    rig.fake.enqueue({
      text: "Let me look.",
      toolCalls: [{ id: "call_r1", name: "Read", args: { path: "notes.txt" } }],
    });
    const gw1 = await rig.start();
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
    const store = await openStore({ dataDir: rig.dataDir });
    try {
      expect((await store.getHead(conversationId))?.revision).to.equal(2);
      const tool = (await store.loadMessages(conversationId)).filter((m) => m.role === "tool");
      expect(tool.map((m) => JSON.parse(m.body).content)).to.deep.equal(["hi\n"]);
    } finally {
      await store.close();
    }

    const gw2 = await rig.start();
    const client = new CursorClient(gw2.url, { workspace });
    for (const data of first.blobs.values()) client.putBlob(data);
    rig.fake.enqueue({ text: ANSWER });
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
    const [before, after] = rig.fake.requests.slice(-2).map((r) => r.body as ChatBody);
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
