// The AEP session core over a real WebSocket with a scripted worker, across connections and restarts: re-attach
// (mid-message, with open requests), a second connection, a gateway that dies mid-turn, unconfirmed deliveries after
// a restart, and the bound on live sessions. session.test.ts has the single-connection behaviour.
import { expect } from "chai";
import { createHash } from "node:crypto";
import { AepClient, openSession } from "./aep-client.js";
import { OrderingChecker } from "./invariants.js";
import { ScriptedFactory } from "./scripted-worker.js";
import { runPlainTurn, useScriptedRig, RIG_TOKEN } from "./scripted-rig.js";

describe("AEP session core: re-attach, restart and the session bound (scripted worker)", () => {
  const rig = useScriptedRig();
  const { open } = rig;

  it("a client that reconnects with its session_key gets state and its seq goes on; mid-message it gets message.start first", async () => {
    const checker = new OrderingChecker();
    const { client, state } = await open({ session_key: "k1" }, checker);
    const from = await runPlainTurn(client, "m1", "go");
    rig.factory.last.emit({ type: "text.delta", blockId: "b", text: "one " });
    await client.next("message.delta", from);
    await client.drop();
    rig.factory.last.emit({ type: "text.delta", blockId: "b", text: "lost " });

    const again = await open({ session_key: "k1" }, checker);
    expect(again.state.session_id).to.equal(state.session_id);
    expect(again.state.event.data).to.deep.include({ state: "running" });
    expect(again.state.seq).to.be.greaterThan(client.received.at(-1)!.seq);
    rig.factory.last.emit(
      { type: "text.delta", blockId: "b", text: "two" },
      { type: "text.completed", blockId: "b", text: "one lost two" },
      { type: "turn.finished", outcome: "completed" },
    );
    await again.client.next("runtime.execution.completed");
    // Joined mid-message without a last seq: the message's start comes again before its deltas.
    expect(again.client.kinds()).to.deep.equal([
      "state(running)",
      "message.start",
      "message.delta",
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
    ]);
    await again.client.close();

    const later = await open({ session_key: "k1" }, checker);
    expect(later.state.event.data).to.deep.equal({ state: "idle" });
    expect(checker.violations).to.deep.equal([]);
  });

  it("a client that re-attaches mid-turn gets the requests still waiting for an answer, and its answer reaches the worker", async () => {
    const checker = new OrderingChecker();
    const { client } = await open({ session_key: "k-ask" }, checker);
    const from = await runPlainTurn(client, "m1", "go");
    const worker = rig.factory.last;
    worker.beginTurn();
    worker.emit({
      type: "interaction.requested",
      id: "answered",
      kind: "permission",
      payload: { tool_name: "Read", input: {} },
    });
    await client.next("permission_request", from);
    client.send("permission_response", { id: "answered", allowed: true });
    await new Promise<void>((resolve) =>
      (function poll() {
        worker.answers.length > 0 ? resolve() : setImmediate(poll);
      })(),
    );
    await client.drop();
    // Asked while nobody is attached.
    worker.emit({
      type: "interaction.requested",
      id: "perm-away",
      kind: "permission",
      payload: { tool_name: "Bash", input: { command: "ls" } },
    });

    const again = await open({ session_key: "k-ask" }, checker);
    const request = await again.client.next("permission_request");
    expect(again.client.kinds()).to.deep.equal(["state(running)", "permission_request"]);
    expect(request.event.data).to.deep.include({ id: "perm-away", tool_name: "Bash" });
    again.client.send("permission_response", { id: "perm-away", allowed: false });
    await new Promise<void>((resolve) =>
      (function poll() {
        worker.answers.length > 1 ? resolve() : setImmediate(poll);
      })(),
    );
    expect(worker.answers[1]).to.deep.include({ id: "perm-away" });
    worker.emit({ type: "turn.finished", outcome: "completed" });
    await again.client.next("runtime.execution.completed");
    expect(checker.violations).to.deep.equal([]);
  });

  it("a gateway that dies mid-turn (nothing written at exit) comes back with seqs above every one its client saw", async () => {
    const { client, state } = await open({ session_key: "k-crash" });
    const from = await runPlainTurn(client, "m1", "go");
    rig.factory.last.emit({ type: "text.delta", blockId: "b", text: "seen" });
    const seen = (await client.next("message.delta", from)).seq;
    // The reservation is written in the background: wait for it, as a crash later than that would.
    while ((await rig.temp.store.aep.getSession(state.session_id))!.lastSeq < seen)
      await new Promise((resolve) => setImmediate(resolve));
    // A second gateway on the same store, the first one never closed: what a restart after SIGKILL finds.
    const restarted = await rig.listen({ factory: new ScriptedFactory() });
    try {
      const again = await openSession(restarted.url, { token: RIG_TOKEN, session_key: "k-crash" });
      expect(again.state.session_id).to.equal(state.session_id);
      expect(again.state.seq).to.be.greaterThan(seen);
      await again.client.close();
    } finally {
      await restarted.close();
    }
  });

  it("a second connection to an attached session is refused with SESSION_ALREADY_CONNECTED", async () => {
    await open({ session_key: "solo" });
    const other = await AepClient.connect(rig.listener.url);
    other.send("init", { token: RIG_TOKEN, session_key: "solo" });
    const err = await other.next("error");
    expect(err.event.data).to.deep.include({ code: "SESSION_ALREADY_CONNECTED" });
    await other.closed;
  });

  it("an input the worker could not take is acked failed, then error, done and the runtime failure", async () => {
    const { client } = await open();
    const from = client.mark();
    rig.factory.failSend = new Error("stdin closed");
    client.send("input", { content: "lost" }, "m1");
    await client.next("runtime.execution.failed", from);
    expect(client.kinds(from)).to.deep.equal([
      "input.ack",
      "state(running)",
      "input.ack",
      "error",
      "done",
      "state(idle)",
      "runtime.execution.failed",
    ]);
    expect(client.of("input.ack", from)[1]).to.deep.include({ status: "failed", error_code: "WORKER_START_FAILED" });
    expect(client.of("error", from)[0]).to.deep.include({ code: "WORKER_START_FAILED" });
    expect(await rig.temp.store.aep.getInput(client.sessionId, "m1")).to.deep.include({
      deliveryStatus: "failed",
      runtimeStatus: "failed",
    });
  });

  it("after a gateway restart an input whose delivery nobody confirmed is unknown, and a retry of it is never re-sent", async () => {
    const { client } = await open({ session_key: "restart" });
    const sessionId = client.sessionId;
    await client.close();
    await rig.listener.close();
    // The gateway went down between the ledger write and the worker's write.
    const payloadHash = createHash("sha256")
      .update(JSON.stringify({ content: "x" }))
      .digest("hex");
    await rig.temp.store.aep.recordInput({
      sessionId,
      clientMessageId: "in-flight",
      executionId: "exec_lost",
      payloadHash,
    });
    await rig.temp.store.aep.settleAfterRestart();
    rig.listener = await rig.listen();
    const { client: again, state } = await open({ session_key: "restart" });
    expect(state.session_id).to.equal(sessionId);
    expect(state.event.data).to.deep.equal({ state: "idle" });
    expect(state.seq).to.be.greaterThan(1);
    const row = (await rig.temp.store.aep.getInput(sessionId, "in-flight"))!;
    expect(row.deliveryStatus).to.equal("unknown");
    again.send("input", { content: "x" }, "in-flight");
    const ack = await again.next("input.ack");
    expect(ack.event.data).to.deep.equal({
      client_message_id: "in-flight",
      execution_id: "exec_lost",
      status: "unknown",
      duplicate: true,
    });
    expect(rig.factory.workers).to.have.length(0);
  });

  it("keeps a bounded number of live sessions: detached idle ones are put away and revived by their key", async () => {
    await rig.listener.close();
    rig.listener = await rig.listen({ maxLiveSessions: 2 });
    const a = await open({ session_key: "a" });
    await a.client.close();
    await open({ session_key: "b" });
    await open({ session_key: "c" }); // puts "a" away
    const refused = await AepClient.connect(rig.listener.url);
    refused.send("init", { token: RIG_TOKEN, session_key: "a", workdir: rig.workdir });
    expect((await refused.next("error")).event.data).to.deep.include({ code: "GATEWAY_OVERLOAD" });
    await refused.closed;
    expect(await rig.temp.store.aep.findSessionByKey("a")).to.deep.include({
      sessionId: a.state.session_id,
      state: "idle",
    });
  });
});
