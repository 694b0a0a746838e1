import { expect } from "chai";
import { BlobIntegrityError, StaleCheckpointError } from "../../store/index.js";
import { BlobKinds, EdgeKinds, blobId } from "../../cursor/blob-graph.js";
import { type TempStore, blobOf, tempStore, utf8 } from "./temp-store.js";

/** A checkpoint with one root prompt and one turn holding a user message and one step. */
function checkpointGraph(label: string) {
  const root = blobOf(`{"role":"system","content":"${label}"}`, BlobKinds.RootPromptJson);
  const user = blobOf(`user ${label}`, BlobKinds.UserMessage);
  const step = blobOf(`step ${label}`, BlobKinds.ConversationStep);
  const turn = blobOf(`turn ${label}`, BlobKinds.ConversationTurn);
  const checkpoint = blobOf(`checkpoint ${label}`, BlobKinds.Checkpoint);
  return {
    checkpointId: checkpoint.id,
    blobs: [root, user, step, turn, checkpoint],
    edges: [
      { parent: checkpoint.id, child: root.id, kind: EdgeKinds.CheckpointRootPrompt, ordinal: 0 },
      { parent: checkpoint.id, child: turn.id, kind: EdgeKinds.CheckpointTurn, ordinal: 0 },
      { parent: turn.id, child: user.id, kind: EdgeKinds.TurnUserMessage, ordinal: 0 },
      { parent: turn.id, child: step.id, kind: EdgeKinds.TurnStep, ordinal: 0 },
    ],
  };
}

describe("store: checkpoint commit and conversation head", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  async function edgeCount(): Promise<number> {
    const db = await t.inspect();
    const [{ n }] = await db("blob_edges").count({ n: "*" });
    await db.destroy();
    return Number(n);
  }

  it("refuses, inside the transaction, a commit whose run is no longer current: the head and blobs stay as they were", async () => {
    const first = checkpointGraph("a");
    await t.store.commitCheckpoint({ conversationId: "c", ...first });
    let current = true;
    const late = checkpointGraph("late");
    // The guard is asked when the transaction runs (holding the write lock), not when the commit was requested.
    const stale = t.store.commitCheckpoint({ conversationId: "c", ...late, stillCurrent: () => current });
    current = false;
    let error: unknown;
    await stale.catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(StaleCheckpointError);
    expect(await t.store.getHead("c")).to.deep.equal({ checkpointId: first.checkpointId, revision: 1 });
    expect(await t.store.missingBlobs([late.checkpointId])).to.deep.equal([late.checkpointId]);
  });

  it("a conversation without a checkpoint has no head", async () => {
    expect(await t.store.getHead("c1")).to.equal(undefined);
  });

  it("commits blobs, edges and head together; the first revision is 1", async () => {
    const g = checkpointGraph("one");
    expect(await t.store.commitCheckpoint({ conversationId: "c1", ...g })).to.deep.equal({ revision: 1 });
    expect(await t.store.getHead("c1")).to.deep.equal({ checkpointId: g.checkpointId, revision: 1 });
    expect(await t.store.missingBlobs(g.blobs.map((b) => b.id))).to.deep.equal([]);
    expect(await edgeCount()).to.equal(4);
  });

  it("each commit switches the head and increments the revision, per conversation", async () => {
    const one = checkpointGraph("one");
    const two = checkpointGraph("two");
    await t.store.commitCheckpoint({ conversationId: "c1", ...one });
    expect(await t.store.commitCheckpoint({ conversationId: "c1", ...two })).to.deep.equal({ revision: 2 });
    expect(await t.store.commitCheckpoint({ conversationId: "c2", ...one })).to.deep.equal({ revision: 1 });
    expect(await t.store.getHead("c1")).to.deep.equal({ checkpointId: two.checkpointId, revision: 2 });
    expect(await t.store.getHead("c2")).to.deep.equal({ checkpointId: one.checkpointId, revision: 1 });
  });

  it("recommitting the same graph ignores duplicate blobs and edges but still advances the revision", async () => {
    const g = checkpointGraph("one");
    await t.store.commitCheckpoint({ conversationId: "c1", ...g });
    expect(await t.store.commitCheckpoint({ conversationId: "c1", ...g })).to.deep.equal({ revision: 2 });
    expect(await edgeCount()).to.equal(4);
  });

  it("a bad blob in the batch leaves blobs, edges and head untouched", async () => {
    const one = checkpointGraph("one");
    await t.store.commitCheckpoint({ conversationId: "c1", ...one });
    const two = checkpointGraph("two");
    const forged = { id: blobId(utf8("claimed")), data: utf8("tampered") };
    const err = await t.store
      .commitCheckpoint({ conversationId: "c1", ...two, blobs: [...two.blobs, forged] })
      .catch((e: unknown) => e);
    expect(err).to.be.instanceOf(BlobIntegrityError);
    expect(await t.store.getHead("c1")).to.deep.equal({ checkpointId: one.checkpointId, revision: 1 });
    expect(await t.store.missingBlobs(two.blobs.map((b) => b.id))).to.have.length(two.blobs.length);
    expect(await edgeCount()).to.equal(4);
  });

  it("an edge to a missing blob rolls back the whole commit: no head past a missing child", async () => {
    const one = checkpointGraph("one");
    await t.store.commitCheckpoint({ conversationId: "c1", ...one });
    const two = checkpointGraph("two");
    const absent = blobId(utf8("never sent"));
    const dangling = { parent: two.checkpointId, child: absent, kind: EdgeKinds.CheckpointTurn, ordinal: 1 };
    const edges = [...two.edges, dangling];
    const err = await t.store.commitCheckpoint({ conversationId: "c1", ...two, edges }).catch((e: unknown) => e);
    expect(String(err)).to.match(/FOREIGN KEY constraint failed/);
    expect(await t.store.getHead("c1")).to.deep.equal({ checkpointId: one.checkpointId, revision: 1 });
    expect(await t.store.missingBlobs(two.blobs.map((b) => b.id))).to.have.length(two.blobs.length);
    expect(await edgeCount()).to.equal(4);
  });

  it("commits the checkpoint's messages and the next provider_call_index in the same transaction (one fsync)", async () => {
    await t.store.createRun({ runId: "r1", conversationId: "c1", model: "m" });
    const commits: string[] = [];
    const reopened = await t.reopen({ onQuery: (sql) => /^commit/i.test(sql) && commits.push(sql) });
    commits.length = 0; // opening runs the migrations' own transaction
    const g = checkpointGraph("one");
    const rows = [{ role: "assistant", origin: "assistant", body: '{"role":"assistant"}' }];
    await reopened.commitCheckpoint({
      conversationId: "c1",
      ...g,
      messages: { runId: "r1", rows },
      providerCallIndex: { runId: "r1", index: 1 },
    });
    expect(commits).to.have.length(1);
    expect((await reopened.loadMessages("c1")).map((m) => m.body)).to.deep.equal(['{"role":"assistant"}']);
    expect((await reopened.getRun("r1"))!.providerCallIndex).to.equal(1);
  });

  it("a checkpoint that fails rolls back its messages and provider_call_index too", async () => {
    await t.store.createRun({ runId: "r1", conversationId: "c1", model: "m" });
    const two = checkpointGraph("two");
    const dangling = {
      parent: two.checkpointId,
      child: blobId(utf8("never sent")),
      kind: EdgeKinds.CheckpointTurn,
      ordinal: 1,
    };
    const rows = [{ role: "assistant", origin: "assistant", body: "{}" }];
    const err = await t.store
      .commitCheckpoint({
        conversationId: "c1",
        ...two,
        edges: [...two.edges, dangling],
        messages: { runId: "r1", rows },
        providerCallIndex: { runId: "r1", index: 1 },
      })
      .catch((e: unknown) => e);
    expect(String(err)).to.match(/FOREIGN KEY constraint failed/);
    expect(await t.store.loadMessages("c1")).to.deep.equal([]);
    expect((await t.store.getRun("r1"))!.providerCallIndex).to.equal(-1);
  });

  it("a head may point at a checkpoint blob stored by an earlier put", async () => {
    const g = checkpointGraph("one");
    await t.store.putBlobs(g.blobs);
    expect(await t.store.commitCheckpoint({ conversationId: "c1", ...g, blobs: [] })).to.deep.equal({ revision: 1 });
  });

  it("refuses a head whose checkpoint blob is not stored", async () => {
    const err = await t.store
      .commitCheckpoint({ conversationId: "c1", checkpointId: blobId(utf8("nowhere")), blobs: [], edges: [] })
      .catch((e: unknown) => e);
    expect(String(err)).to.match(/FOREIGN KEY constraint failed/);
    expect(await t.store.getHead("c1")).to.equal(undefined);
  });
});
