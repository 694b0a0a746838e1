// The AEP rows of the store: sessions by key, and the input ledger's root records (docs/protocol/aep.md §7).
import { expect } from "chai";
import { tempStore, type TempStore } from "../store/temp-store.js";

const session = {
  sessionId: "sess_1",
  sessionKey: "key-1",
  worker: "claude-code",
  workdir: "/w",
  workerSessionId: "wsid",
  workerStarted: false,
  state: "created" as const,
  lastSeq: 0,
};

describe("AEP store (sessions and input ledger)", () => {
  let temp: TempStore;
  beforeEach(async () => {
    temp = await tempStore();
    await temp.store.aep.createSession(session);
  });
  afterEach(() => temp.cleanup());

  it("keeps sessions by server id and by client key; updates what a restart needs", async () => {
    const aep = temp.store.aep;
    expect(await aep.findSessionByKey("key-1")).to.deep.equal(session);
    await aep.updateSession("sess_1", { workerStarted: true, state: "idle", lastSeq: 42 });
    expect(await aep.getSession("sess_1")).to.deep.include({
      workerStarted: true,
      state: "idle",
      lastSeq: 42,
      workdir: "/w",
    });
    expect(await aep.findSessionByKey("nope")).to.equal(undefined);
  });

  it("records an input once: a second record of the same id returns the first row untouched", async () => {
    const aep = temp.store.aep;
    expect(
      await aep.recordInput({ sessionId: "sess_1", clientMessageId: "m1", executionId: "x1", payloadHash: "h1" }),
    ).to.deep.equal({ recorded: true });
    await aep.setDelivery("x1", "delivered");
    await aep.setRuntime("x1", "started");
    const again = await aep.recordInput({
      sessionId: "sess_1",
      clientMessageId: "m1",
      executionId: "x2",
      payloadHash: "h2",
    });
    expect(again).to.deep.equal({
      recorded: false,
      existing: {
        sessionId: "sess_1",
        clientMessageId: "m1",
        executionId: "x1",
        payloadHash: "h1",
        deliveryStatus: "delivered",
        runtimeStatus: "started",
      },
    });
    await aep.setRuntime("x1", "failed", "WORKER_CRASH");
    expect(await aep.getInput("sess_1", "m1")).to.deep.include({ runtimeStatus: "failed", errorCode: "WORKER_CRASH" });
  });

  it("after a restart, what nobody can know becomes unknown: unconfirmed deliveries and unfinished runs", async () => {
    const aep = temp.store.aep;
    await aep.updateSession("sess_1", { state: "running" });
    await aep.recordInput({ sessionId: "sess_1", clientMessageId: "accepted", executionId: "x1", payloadHash: "h" });
    await aep.recordInput({ sessionId: "sess_1", clientMessageId: "started", executionId: "x2", payloadHash: "h" });
    await aep.setDelivery("x2", "delivered");
    await aep.setRuntime("x2", "started");
    await aep.recordInput({ sessionId: "sess_1", clientMessageId: "done", executionId: "x3", payloadHash: "h" });
    await aep.setDelivery("x3", "delivered");
    await aep.setRuntime("x3", "completed");
    await aep.settleAfterRestart();
    expect(await aep.getInput("sess_1", "accepted")).to.deep.include({ deliveryStatus: "unknown" });
    expect(await aep.getInput("sess_1", "started")).to.deep.include({
      deliveryStatus: "delivered",
      runtimeStatus: "unknown",
    });
    expect(await aep.getInput("sess_1", "done")).to.deep.include({
      deliveryStatus: "delivered",
      runtimeStatus: "completed",
    });
    expect(await aep.getSession("sess_1")).to.deep.include({ state: "idle" });
  });

  it("deleting a session deletes its ledger rows", async () => {
    const aep = temp.store.aep;
    await aep.recordInput({ sessionId: "sess_1", clientMessageId: "m1", executionId: "x1", payloadHash: "h" });
    await aep.deleteSession("sess_1");
    expect(await aep.getSession("sess_1")).to.equal(undefined);
    expect(await aep.getInput("sess_1", "m1")).to.equal(undefined);
  });

  it("the event log reads back after a seq in order, and is pruned to its byte budget and age", async () => {
    const aep = temp.store.aep;
    const events = [1, 2, 3, 4, 5].map((seq) => ({ seq, envelope: `{"seq":${seq},"pad":"${"x".repeat(90)}"}` }));
    await aep.appendEvents("sess_1", events);
    await aep.appendEvents("sess_1", [events[4]!]); // a repeat is ignored, not an error
    expect((await aep.eventsAfter("sess_1", 2, 10)).map((e) => e.seq)).to.deep.equal([3, 4, 5]);
    expect((await aep.eventsAfter("sess_1", 0, 2)).map((e) => e.seq)).to.deep.equal([1, 2]);
    // Each row is 100 bytes: a 250-byte budget keeps the newest two.
    await aep.pruneEvents("sess_1", { maxBytes: 250, maxAgeMs: 60_000 });
    expect((await aep.eventsAfter("sess_1", 0, 10)).map((e) => e.seq)).to.deep.equal([4, 5]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await aep.pruneEvents("sess_1", { maxBytes: 1_000_000, maxAgeMs: 1 });
    expect(await aep.eventsAfter("sess_1", 0, 10)).to.deep.equal([]);
    await aep.appendEvents("sess_1", events);
    await aep.deleteSession("sess_1");
    expect(await aep.eventsAfter("sess_1", 0, 10), "the log goes with its session").to.deep.equal([]);
  });
});
