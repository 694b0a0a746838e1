import { expect } from "chai";
import { openStore } from "../../store/index.js";
import { EdgeKinds } from "../../cursor/blob-graph.js";
import { type TempStore, blobOf, tempStore } from "./temp-store.js";

describe("store: database setup", () => {
  let t: TempStore;
  let log: string[];
  beforeEach(async () => {
    log = [];
    t = await tempStore({ onQuery: (sql) => log.push(sql) });
  });
  afterEach(() => t.cleanup());

  it("every connection runs WAL, synchronous=FULL, foreign keys and a busy timeout (docs/protocol/cursor-run.md §6.2–§6.3)", async () => {
    const db = await t.inspect();
    const pragma = async (name: string) => Object.values((await db.raw(`PRAGMA ${name}`))[0] as object)[0];
    expect(await pragma("journal_mode")).to.equal("wal");
    expect(await pragma("synchronous")).to.equal(2);
    expect(await pragma("foreign_keys")).to.equal(1);
    expect(await pragma("busy_timeout")).to.equal(5000);
  });

  it("write transactions begin IMMEDIATE", async () => {
    log.length = 0;
    const a = blobOf("a");
    await t.store.putBlobs([a]);
    await t.store.commitCheckpoint({ conversationId: "c1", checkpointId: a.id, blobs: [], edges: [] });
    await t.store.appendMessages("c1", "r1", [{ role: "user", origin: "user", body: "{}" }]);
    await t.store.appendRuntimeMessageOnce("c1", "r1", "ev", "tag");
    const begins = log.filter((sql) => /^BEGIN/i.test(sql));
    expect(begins).to.deep.equal(Array(4).fill("BEGIN IMMEDIATE;"));
    expect(log.filter((sql) => sql === "COMMIT;")).to.have.length(4);
  });

  it("data survives close and reopen, and reopening does not re-run migrations", async () => {
    const cp = blobOf("checkpoint");
    const child = blobOf("turn");
    await t.store.commitCheckpoint({
      conversationId: "c1",
      checkpointId: cp.id,
      blobs: [child, cp],
      edges: [{ parent: cp.id, child: child.id, kind: EdgeKinds.CheckpointTurn, ordinal: 0 }],
    });
    await t.store.appendRuntimeMessageOnce("c1", "r1", "ev-1", "first");
    await t.store.createRun({ runId: "r1", conversationId: "c1", model: "m" });
    await t.store.close();

    log.length = 0;
    const reopened = await t.reopen({ onQuery: (sql) => log.push(sql) });
    expect(log.some((sql) => /create table/i.test(sql))).to.equal(false);
    expect(await reopened.getHead("c1")).to.deep.equal({ checkpointId: cp.id, revision: 1 });
    expect(await reopened.getBlob(child.id)).to.deep.equal(child.data);
    expect(await reopened.appendRuntimeMessageOnce("c1", "r2", "ev-1", "second")).to.deep.equal({
      body: "first",
      appended: false,
    });
    expect((await reopened.getRun("r1"))!.status).to.equal("running");
  });

  it("opens by explicit filename, creating missing directories", async () => {
    const s = await openStore({ filename: `${t.dataDir}/nested/deeper/explicit.sqlite3` });
    try {
      expect(await s.getHead("c1")).to.equal(undefined);
    } finally {
      await s.close();
    }
  });
});
