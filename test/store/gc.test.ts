import { expect } from "chai";
import { BlobKinds, EdgeKinds } from "../../cursor/blob-graph.js";
import { scheduleBlobGc } from "../../engine/blob-gc.js";
import { createJsonLogger } from "../../log/logger.js";
import { waitUntil } from "../support/util.js";
import { blobOf, tempStore, type TempStore } from "./temp-store.js";

const HOUR = 3_600_000;

/** checkpoint → turn → step, plus a blob the turn shares with another graph. */
function graph(label: string, shared = blobOf("shared step", BlobKinds.ConversationStep)) {
  const step = blobOf(`step ${label}`, BlobKinds.ConversationStep);
  const turn = blobOf(`turn ${label}`, BlobKinds.ConversationTurn);
  const checkpoint = blobOf(`checkpoint ${label}`, BlobKinds.Checkpoint);
  return {
    checkpointId: checkpoint.id,
    blobs: [shared, step, turn, checkpoint],
    edges: [
      { parent: checkpoint.id, child: turn.id, kind: EdgeKinds.CheckpointTurn, ordinal: 0 },
      { parent: turn.id, child: step.id, kind: EdgeKinds.TurnStep, ordinal: 0 },
      { parent: turn.id, child: shared.id, kind: EdgeKinds.TurnStep, ordinal: 1 },
    ],
  };
}

describe("store: blob garbage collection (docs/protocol/cursor-run.md §6.6)", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  it("deletes only blobs no head or message reaches, once they are older than the cutoff", async () => {
    const old = graph("old");
    const current = graph("current");
    await t.store.commitCheckpoint({ conversationId: "c", ...old });
    await t.store.commitCheckpoint({ conversationId: "c", ...current }); // the head moves on: "old" is unreachable
    const messageBlob = blobOf("root prompt json", BlobKinds.RootPromptJson);
    const orphan = blobOf("never referenced");
    await t.store.putBlobs([messageBlob, orphan]);
    await t.store.appendMessages("c", "run-1", [{ role: "user", origin: "user", body: "{}", blobId: messageBlob.id }]);

    // Nothing is old enough yet: the retention period protects blobs of runs in flight.
    expect(await t.store.collectBlobs(Date.now() - HOUR)).to.deep.equal({ deletedBlobs: 0, deletedBytes: 0 });

    const result = await t.store.collectBlobs(Date.now() + HOUR);
    const dead = [old.blobs[1]!, old.blobs[2]!, old.blobs[3]!, orphan];
    expect(result).to.deep.equal({ deletedBlobs: 4, deletedBytes: dead.reduce((n, b) => n + b.data.byteLength, 0) });
    for (const b of dead) expect(await t.store.getBlob(b.id)).to.equal(undefined);
    for (const b of [...current.blobs, messageBlob]) expect(await t.store.getBlob(b.id)).to.not.equal(undefined);
    const db = await t.inspect();
    const edges = await db("blob_edges").count({ n: "*" });
    expect(Number(edges[0]!.n)).to.equal(current.edges.length);
  });

  it("writing an old unreachable blob again renews it, so a run reusing it keeps it until its checkpoint", async () => {
    const orphan = blobOf("reused later");
    await t.store.putBlobs([orphan]);
    const db = await t.inspect();
    await db("blobs").update({ created_at: Date.now() - 10 * HOUR });
    await t.store.putBlobs([orphan]);
    expect(await t.store.collectBlobs(Date.now() - HOUR)).to.deep.equal({ deletedBlobs: 0, deletedBytes: 0 });
  });

  it("keeps an old unreachable blob that a younger kept blob still points at (the sweep would otherwise fail)", async () => {
    // Old turn, then a branch tip written later that points at it; the head then moves to another branch.
    const oldTurn = blobOf("old turn", BlobKinds.ConversationTurn);
    await t.store.putBlobs([oldTurn]);
    const db = await t.inspect();
    await db("blobs").update({ created_at: Date.now() - 10 * HOUR });
    const tip = blobOf("abandoned branch tip", BlobKinds.Checkpoint);
    await t.store.commitCheckpoint({
      conversationId: "c",
      checkpointId: tip.id,
      blobs: [tip],
      edges: [{ parent: tip.id, child: oldTurn.id, kind: EdgeKinds.CheckpointTurn, ordinal: 0 }],
    });
    const other = graph("other branch");
    await t.store.commitCheckpoint({ conversationId: "c", ...other });

    expect(await t.store.collectBlobs(Date.now() - HOUR)).to.deep.equal({ deletedBlobs: 0, deletedBytes: 0 });
    expect(await t.store.getBlob(oldTurn.id)).to.not.equal(undefined);
    // Once the tip is old too, both go together.
    const both = await t.store.collectBlobs(Date.now() + HOUR);
    expect(both.deletedBlobs).to.equal(2);
  });

  it("the gateway's schedule sweeps after start, logs what it freed, and stop() waits for a sweep in progress", async () => {
    const orphan = blobOf("orphan for the schedule");
    await t.store.putBlobs([orphan]);
    const lines: string[] = [];
    let deletions = 0;
    const onDeleted = () => void deletions++;
    const gc = scheduleBlobGc(t.store, createJsonLogger({ write: (line: string) => lines.push(line) }), {
      retentionMs: -HOUR,
      firstAfterMs: 0,
      onDeleted,
    });
    await waitUntil(
      () => lines.length > 0,
      5_000,
      () => "no gc log line",
    );
    await gc.stop();
    expect(deletions, "the history cache is told when blobs go").to.equal(1);
    expect(JSON.parse(lines[0]!)).to.include({
      msg: "unreachable blobs collected",
      blobs: 1,
      bytes: orphan.data.byteLength,
    });
    expect(await t.store.getBlob(orphan.id)).to.equal(undefined);
  });

  it("the schedule waits while runs are live, then sweeps once they are gone", async () => {
    const orphan = blobOf("orphan kept while a run is live");
    await t.store.putBlobs([orphan]);
    let live = true;
    let checks = 0;
    const gc = scheduleBlobGc(t.store, createJsonLogger({ write: () => true }), {
      retentionMs: -HOUR,
      firstAfterMs: 0,
      retryMs: 5,
      idle: () => (checks++, !live),
    });
    await waitUntil(
      () => checks >= 3,
      5_000,
      () => "the schedule never asked again",
    );
    expect(await t.store.getBlob(orphan.id), "nothing swept while a run is live").to.not.equal(undefined);
    const asked = checks;
    live = false;
    await waitUntil(
      () => checks > asked,
      5_000,
      () => "no retry after the runs ended",
    );
    await gc.stop();
    expect(await t.store.getBlob(orphan.id)).to.equal(undefined);
  });
});
