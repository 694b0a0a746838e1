import { expect } from "chai";
import { type TempStore, tempStore } from "./temp-store.js";

describe("store: runs", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  const run = { runId: "req-1", conversationId: "c1", model: "gpt-x" };

  it("beginRun binds a message id to the first state it was sent on and returns that one ever after", async () => {
    const route = { route: "local" as const, modelId: "m" };
    const first = new Uint8Array([1, 2, 3]);
    const later = new Uint8Array([4, 5]);
    const start = (runId: string, messageId: string, baseState: Uint8Array) =>
      t.store.beginRun({ runId, conversationId: "c1", model: "gpt-x", route, input: { messageId, baseState } });
    expect(await start("r1", "m1", first)).to.deep.equal(first);
    expect(await start("r2", "m1", later), "an edit is built on the first anchor").to.deep.equal(first);
    expect(await start("r3", "m2", later)).to.deep.equal(later);
    expect(await t.store.beginRun({ runId: "r4", conversationId: "c1", model: "gpt-x", route })).to.equal(undefined);
  });

  it("a new run is running with provider_call_index -1 and no usage", async () => {
    await t.store.createRun(run);
    const r = await t.store.getRun("req-1");
    expect(r).to.include({ runId: "req-1", conversationId: "c1", model: "gpt-x", status: "running" });
    expect(r!.providerCallIndex).to.equal(-1);
    expect(r!.usage).to.deep.equal({});
    expect(r).not.to.have.property("error");
    expect(r).not.to.have.property("endedAt");
    expect(await t.store.getRun("nope")).to.equal(undefined);
  });

  it("provider_call_index is persisted as each call starts (docs/protocol/cursor-run.md §6.5) and survives reopening", async () => {
    await t.store.createRun(run);
    await t.store.setProviderCallIndex("req-1", 0);
    await t.store.setProviderCallIndex("req-1", 1);
    await t.store.close();
    const reopened = await t.reopen();
    expect((await reopened.getRun("req-1"))!.providerCallIndex).to.equal(1);
  });

  it("setProviderCallIndex refuses an unknown or already terminal run", async () => {
    expect(String(await t.store.setProviderCallIndex("nope", 0).catch((e: unknown) => e))).to.match(/nope/);
    await t.store.createRun(run);
    await t.store.finishRun("req-1", { status: "canceled" });
    expect(String(await t.store.setProviderCallIndex("req-1", 3).catch((e: unknown) => e))).to.match(/terminal/);
    expect((await t.store.getRun("req-1"))!.providerCallIndex).to.equal(-1);
  });

  it("finishRun records the outcome and usage once; a second terminal commit is ignored", async () => {
    await t.store.createRun(run);
    const usage = { inputTokens: 100, outputTokens: 20, cacheReadTokens: 80, cacheWriteTokens: 0, reasoningTokens: 5 };
    expect(await t.store.finishRun("req-1", { status: "succeeded", usage })).to.equal(true);
    expect(await t.store.finishRun("req-1", { status: "failed", error: "late provider error" })).to.equal(false);
    const r = await t.store.getRun("req-1");
    expect(r).to.include({ status: "succeeded" });
    expect(r).not.to.have.property("error");
    expect(r!.usage).to.deep.equal(usage);
    expect(r!.endedAt).to.be.a("number");
  });

  it("racing terminal commits (e.g. cancel vs. success) have exactly one winner", async () => {
    await t.store.createRun(run);
    const won = await Promise.all([
      t.store.finishRun("req-1", { status: "canceled" }),
      t.store.finishRun("req-1", { status: "succeeded" }),
      t.store.finishRun("req-1", { status: "failed", error: "x" }),
    ]);
    expect(won.filter(Boolean)).to.have.length(1);
    const winner = (["canceled", "succeeded", "failed"] as const)[won.indexOf(true)];
    expect((await t.store.getRun("req-1"))!.status).to.equal(winner);
  });

  it("a failed run keeps its error and only the usage the provider reported", async () => {
    await t.store.createRun(run);
    expect(
      await t.store.finishRun("req-1", { status: "failed", error: "upstream 500", usage: { inputTokens: 7 } }),
    ).to.equal(true);
    const r = await t.store.getRun("req-1");
    expect(r).to.include({ status: "failed", error: "upstream 500" });
    expect(r!.usage).to.deep.equal({ inputTokens: 7 });
  });

  it("finishing an unknown run commits nothing", async () => {
    expect(await t.store.finishRun("nope", { status: "canceled" })).to.equal(false);
    expect(await t.store.getRun("nope")).to.equal(undefined);
  });

  it("reusing a request_id resets the row to a fresh running run", async () => {
    await t.store.createRun(run);
    await t.store.setProviderCallIndex("req-1", 4);
    await t.store.finishRun("req-1", { status: "failed", error: "boom", usage: { inputTokens: 9 } });
    await t.store.createRun({ ...run, conversationId: "c2", model: "claude-y" });
    const r = await t.store.getRun("req-1");
    expect(r).to.include({ conversationId: "c2", model: "claude-y", status: "running", providerCallIndex: -1 });
    expect(r).not.to.have.property("error");
    expect(r).not.to.have.property("endedAt");
    expect(r!.usage).to.deep.equal({});
  });
});
