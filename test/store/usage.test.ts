// Usage per front door, model and UTC day, and the conversation list the status page reads (docs/status-api.md §3,
// §4).
import { expect } from "chai";
import { BlobKinds } from "../../cursor/blob-graph.js";
import { StaleCheckpointError, type UsageTotals, usageDay } from "../../store/index.js";
import { type TempStore, blobOf, tempStore } from "./temp-store.js";

const call = (over: Partial<UsageTotals> = {}): UsageTotals => ({
  frontDoor: "cursor",
  model: "gpt-x",
  day: "2026-12-03",
  input: 100,
  output: 10,
  cacheRead: 60,
  cacheWrite: 0,
  calls: 1,
  ...over,
});

describe("store: usage and conversation list", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  it("adds totals of the same front door, model and day into one row; others get their own", async () => {
    await t.store.addUsage([call(), call({ model: "claude-y" }), call({ frontDoor: "messages" })]);
    await t.store.addUsage([call({ input: 50, output: 5, cacheRead: 0, cacheWrite: 20, calls: 2 })]);
    await t.store.addUsage([call({ day: "2026-12-01" })]);
    const rows = await t.store.usageSince("2026-12-02", 100);
    const row = (frontDoor: string, model: string, fields: object) => ({
      frontDoor,
      model,
      day: "2026-12-03",
      ...fields,
    });
    expect(rows).to.deep.equal([
      row("cursor", "claude-y", { calls: 1, input: 100, output: 10, cacheRead: 60, cacheWrite: 0 }),
      row("cursor", "gpt-x", { calls: 3, input: 150, output: 15, cacheRead: 60, cacheWrite: 20 }),
      row("messages", "gpt-x", { calls: 1, input: 100, output: 10, cacheRead: 60, cacheWrite: 0 }),
    ]);
    expect(await t.store.usageSince("2026-01-01", 2)).to.have.length(2);
  });

  it("adds usage in a checkpoint's transaction, without a commit of its own", async () => {
    const statements: Array<{ sql: string; inTx: boolean }> = [];
    const store = await t.reopen({ onQuery: (sql, inTx) => statements.push({ sql, inTx }) });
    const checkpoint = blobOf("checkpoint", BlobKinds.Checkpoint);
    const commit = { conversationId: "c1", checkpointId: checkpoint.id, blobs: [checkpoint], edges: [] };
    statements.length = 0; // opening ran the migration check
    await store.commitCheckpoint({ ...commit, usage: [call()] });
    expect(statements.filter((s) => /^commit/i.test(s.sql))).to.have.length(1);
    expect(statements.filter((s) => !s.inTx && /^(insert|update)/i.test(s.sql))).to.deep.equal([]);
    expect((await store.usageSince("2026-12-03", 10))[0]).to.include({ calls: 1, input: 100 });
    const stale = await store
      .commitCheckpoint({ ...commit, stillCurrent: () => false, usage: [call()] })
      .catch((e: unknown) => e);
    expect(stale).to.be.instanceOf(StaleCheckpointError);
    expect((await store.usageSince("2026-12-03", 10))[0], "rolled back with the checkpoint").to.include({ calls: 1 });
  });

  it("keys a moment by its UTC day", () => {
    expect(usageDay(new Date("2026-12-03T23:59:59.999Z"))).to.equal("2026-12-03");
    expect(usageDay(new Date("2026-12-04T00:00:00.000+01:00"))).to.equal("2026-12-03");
  });

  it("lists conversations newest first with runs, completed turns (final answers) and the latest model, paged", async () => {
    await t.store.createRun({ runId: "r1", conversationId: "c1", model: "old-model" });
    await t.store.appendMessages("c1", "r1", [
      { role: "assistant", origin: "assistant", body: "{}", toolRoundId: "r1:round-0" },
      { role: "tool", origin: "tool", body: "{}", toolRoundId: "r1:round-0" },
      { role: "assistant", origin: "assistant", body: "{}" },
    ]);
    await new Promise((r) => setTimeout(r, 5));
    await t.store.createRun({ runId: "r2", conversationId: "c2", model: "m2" });
    await new Promise((r) => setTimeout(r, 5));
    await t.store.createRun({ runId: "r3", conversationId: "c1", model: "new-model" });
    await t.store.appendMessages("c1", "r3", [{ role: "assistant", origin: "assistant", body: "{}" }]);
    const first = await t.store.listConversations({ limit: 1, offset: 0 });
    expect(first.total).to.equal(2);
    expect(first.items).to.have.length(1);
    expect(first.items[0]).to.include({ conversationId: "c1", runs: 2, turns: 2, lastModel: "new-model" });
    const second = await t.store.listConversations({ limit: 10, offset: 1 });
    expect(second.items.map((c) => [c.conversationId, c.runs, c.turns, c.lastModel])).to.deep.equal([
      ["c2", 1, 0, "m2"],
    ]);
  });
});
