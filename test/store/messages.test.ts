import { expect } from "chai";
import { blobId } from "../../cursor/blob-graph.js";
import { type TempStore, tempStore, utf8 } from "./temp-store.js";

describe("store: canonical messages and runtime events", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  it("appends in order with consecutive seqs per conversation, starting at 1", async () => {
    const first = await t.store.appendMessages("c1", "r1", [
      { role: "user", origin: "user", body: '{"text":"hi"}' },
      { role: "assistant", origin: "assistant", body: '{"text":"hello"}', blobId: blobId(utf8("a")) },
    ]);
    const second = await t.store.appendMessages("c1", "r2", [
      { role: "tool", origin: "tool", body: '{"result":1}', toolRoundId: "round-1" },
    ]);
    const other = await t.store.appendMessages("c2", "r3", [{ role: "system", origin: "system", body: "{}" }]);
    expect([first, second, other]).to.deep.equal([[1, 2], [3], [1]]);
    expect(await t.store.loadMessages("c1")).to.deep.equal([
      { seq: 1, role: "user", origin: "user", body: '{"text":"hi"}', runId: "r1" },
      { seq: 2, role: "assistant", origin: "assistant", body: '{"text":"hello"}', runId: "r1" },
      { seq: 3, role: "tool", origin: "tool", body: '{"result":1}', toolRoundId: "round-1", runId: "r2" },
    ]);
  });

  it("numbers a batch past one statement's rows consecutively, in the order given", async () => {
    await t.store.appendMessages("c1", "r1", [{ role: "user", origin: "user", body: "0" }]);
    const many = Array.from({ length: 250 }, (_, i) => ({ role: "tool", origin: "tool", body: String(i + 1) }));
    const seqs = await t.store.appendMessages("c1", "r1", many);
    expect(seqs).to.deep.equal(Array.from({ length: 250 }, (_, i) => i + 2));
    const stored = await t.store.loadMessages("c1");
    expect(stored.map((m) => [m.seq, m.body])).to.deep.equal(Array.from({ length: 251 }, (_, i) => [i + 1, String(i)]));
  });

  it("appending nothing returns no seqs and stores nothing", async () => {
    expect(await t.store.appendMessages("c1", "r1", [])).to.deep.equal([]);
    expect(await t.store.loadMessages("c1")).to.deep.equal([]);
  });

  it("rejects an unknown origin and keeps the whole batch out", async () => {
    const err = await t.store
      .appendMessages("c1", "r1", [
        { role: "user", origin: "user", body: "{}" },
        { role: "user", origin: "robot", body: "{}" },
      ])
      .catch((e: unknown) => e);
    expect(String(err)).to.match(/CHECK constraint failed/);
    expect(await t.store.loadMessages("c1")).to.deep.equal([]);
  });

  it("concurrent appends on one store never share a seq", async () => {
    const batches = Array.from({ length: 10 }, (_, i) =>
      t.store.appendMessages("c1", `r${i}`, [
        { role: "user", origin: "user", body: `${i}a` },
        { role: "user", origin: "user", body: `${i}b` },
      ]),
    );
    const seqs = (await Promise.all(batches)).flat();
    expect([...seqs].sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 1));
    // Each batch stays contiguous: its messages are appended in one transaction.
    const loaded = await t.store.loadMessages("c1");
    for (let i = 0; i < 20; i += 2) expect(loaded[i + 1].body).to.equal(loaded[i].body.replace("a", "b"));
  });

  describe("appendRuntimeMessageOnce (docs/protocol/cursor-run.md §8.6)", () => {
    it("appends one role=user, origin=runtime message the first time", async () => {
      await t.store.appendMessages("c1", "r1", [{ role: "user", origin: "user", body: "q" }]);
      const first = await t.store.appendRuntimeMessageOnce("c1", "r1", "run-request:r1", "<reminder>1</reminder>");
      expect(first).to.deep.equal({ body: "<reminder>1</reminder>", appended: true });
      expect(await t.store.loadMessages("c1")).to.deep.equal([
        { seq: 1, role: "user", origin: "user", body: "q", runId: "r1" },
        { seq: 2, role: "user", origin: "runtime", body: "<reminder>1</reminder>", runId: "r1" },
      ]);
    });

    it("a repeat returns the stored body, not the new one, and appends nothing", async () => {
      await t.store.appendRuntimeMessageOnce("c1", "r1", "ev-1", "rendered at 10:00");
      const again = await t.store.appendRuntimeMessageOnce("c1", "r2", "ev-1", "rendered at 10:05");
      expect(again).to.deep.equal({ body: "rendered at 10:00", appended: false });
      expect((await t.store.loadMessages("c1")).map((m) => m.body)).to.deep.equal(["rendered at 10:00"]);
    });

    it("the event identity is scoped to the conversation", async () => {
      await t.store.appendRuntimeMessageOnce("c1", "r1", "ev-1", "one");
      expect(await t.store.appendRuntimeMessageOnce("c2", "r1", "ev-1", "two")).to.deep.equal({
        body: "two",
        appended: true,
      });
    });

    it("concurrent calls for one event append exactly one message", async () => {
      const calls = Array.from({ length: 8 }, (_, i) =>
        t.store.appendRuntimeMessageOnce("c1", "r1", "ev-1", `body ${i}`),
      );
      const results = await Promise.all(calls);
      expect(results.filter((r) => r.appended)).to.have.length(1);
      const winner = results.find((r) => r.appended)!.body;
      expect(new Set(results.map((r) => r.body))).to.deep.equal(new Set([winner]));
      expect((await t.store.loadMessages("c1")).map((m) => m.body)).to.deep.equal([winner]);
    });
  });

  describe("two connections to one file (another process)", () => {
    it("concurrent runtime events through separate connections append exactly once", async () => {
      const other = await t.reopen();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? other : t.store).appendRuntimeMessageOnce("c1", "r1", "ev-1", `body ${i}`),
        ),
      );
      expect(results.filter((r) => r.appended)).to.have.length(1);
      expect(await t.store.loadMessages("c1")).to.have.length(1);
    });

    it("concurrent appends through separate connections get disjoint seqs", async () => {
      const other = await t.reopen();
      const seqs = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? other : t.store).appendMessages("c1", "r1", [{ role: "user", origin: "user", body: `${i}` }]),
        ),
      );
      expect(seqs.flat().sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5, 6]);
    });
  });
});
