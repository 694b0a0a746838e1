// The AEP session core over a real WebSocket with a scripted worker: turn ordering, acks and the ledger, idempotent
// input, busy, stop, interactions, crash and resume, reconnect. The worker is scripted here; test/aep/e2e runs the
// real CLI.
import { expect } from "chai";
import { createHash } from "node:crypto";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import { AepClient, openSession } from "./aep-client.js";
import { OrderingChecker } from "./invariants.js";
import { ScriptedFactory } from "./scripted-worker.js";
import { runPlainTurn, useScriptedRig, RIG_TOKEN } from "./scripted-rig.js";

describe("AEP session core (scripted worker)", () => {
  const rig = useScriptedRig();
  const { open } = rig;

  it("answers init with state(created) and a server session id; a plain turn follows the order of docs/protocol/aep.md §8", async () => {
    const { client, state } = await open();
    expect(state.event.data).to.deep.equal({ state: "created" });
    expect(state.session_id).to.match(/^sess_/);
    expect(state.seq).to.equal(1);

    const from = await runPlainTurn(client, "m1", "hello");
    const worker = rig.factory.last;
    expect(worker.options).to.include({ workdir: rig.workdir, resume: false });
    expect(worker.inputs).to.have.length(1);
    worker.beginTurn();
    worker.emit(
      { type: "text.delta", blockId: "b0", text: "Hel" },
      { type: "text.delta", blockId: "b0", text: "lo" },
      { type: "text.completed", blockId: "b0", text: "Hello" },
      { type: "turn.finished", outcome: "completed", usage: { inputTokens: 3, outputTokens: 2 } },
    );
    await client.next("runtime.execution.completed", from);
    expect(client.kinds(from)).to.deep.equal([
      "input.ack",
      "state(running)",
      "input.ack",
      "runtime.execution.started",
      "message.start",
      "message.delta",
      "message.delta",
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
    ]);
    expect(client.of("input.ack", from).map((a) => a.status)).to.deep.equal(["accepted", "delivered"]);
    expect(client.of("done", from)[0]).to.deep.equal({ success: true, stats: { input_tokens: 3, output_tokens: 2 } });
    const seqs = client.received.slice(from).map((e) => e.seq);
    expect(seqs).to.deep.equal(seqs.map((_, i) => seqs[0]! + i));
    const exec = client.of("input.ack", from)[0]!.execution_id;
    expect(await rig.temp.store.aep.getInput(client.sessionId, "m1")).to.deep.include({
      executionId: exec,
      deliveryStatus: "delivered",
      runtimeStatus: "completed",
    });
    expect(client.checker.violations).to.deep.equal([]);
  });

  it("ping gets pong with seq 0; unknown kinds get NOT_SUPPORTED, bad frames INVALID_MESSAGE, and the session goes on", async () => {
    const { client } = await open();
    client.send("ping", {});
    const pong = await client.next("pong");
    expect(pong.seq).to.equal(0);
    const teleport = client.send("teleport", { to: "mars" });
    const err = await client.next("error");
    expect(err.event.data).to.deep.include({ code: "NOT_SUPPORTED", client_message_id: teleport });
    client.ws.send("{not json");
    client.send("input", { text: "no content field" });
    await client.next((e) => e.event.type === "error" && client.of("error").length === 3);
    expect(client.of("error").map((e) => e.code)).to.deep.equal([
      "NOT_SUPPORTED",
      "INVALID_MESSAGE",
      "INVALID_MESSAGE",
    ]);
    await runPlainTurn(client, "m1", "still alive");
    expect(client.checker.violations).to.deep.equal([]);
  });

  it("an input id repeated with the same payload returns the existing execution (duplicate) and never reaches the worker twice; a different payload is INVALID_MESSAGE", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "dup", "once");
    const exec = client.of("input.ack", from)[0]!.execution_id;
    client.send("input", { content: "once" }, "dup");
    const again = await client.next(
      (e) => e.event.type === "input.ack" && (e.event.data as { duplicate?: boolean }).duplicate === true,
      from,
    );
    expect(again.event.data).to.deep.equal({
      client_message_id: "dup",
      execution_id: exec,
      status: "delivered",
      duplicate: true,
    });
    client.send("input", { content: "twice?" }, "dup");
    const err = await client.next("error", from);
    expect(err.event.data).to.deep.include({ code: "INVALID_MESSAGE" });
    expect(rig.factory.last.inputs.map((i) => i.content)).to.deep.equal(["once"]);
    rig.factory.last.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("runtime.execution.completed", from);
  });

  it("a second input while a turn runs is recorded and refused with SESSION_BUSY", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "first", "long job");
    client.send("input", { content: "meanwhile" }, "second");
    const failed = await client.next(
      (e) => e.event.type === "input.ack" && (e.event.data as { status: string }).status === "failed",
      from,
    );
    expect(failed.event.data).to.deep.include({ client_message_id: "second", error_code: "SESSION_BUSY" });
    expect(await rig.temp.store.aep.getInput(client.sessionId, "second")).to.deep.include({
      deliveryStatus: "failed",
      errorCode: "SESSION_BUSY",
    });
    rig.factory.last.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", from);
  });

  it("stop interrupts the worker and ends the turn with done(stopped_by_user); an open permission is withdrawn, not answered", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "go");
    const worker = rig.factory.last;
    worker.beginTurn();
    worker.emit({
      type: "interaction.requested",
      id: "perm-1",
      kind: "permission",
      payload: { tool_name: "Bash", input: { command: "ls" } },
    });
    const request = await client.next("permission_request", from);
    expect(request.event.data).to.deep.equal({
      id: "perm-1",
      tool_name: "Bash",
      description: "Bash",
      args: ['{"command":"ls"}'],
      input_raw: { command: "ls" },
    });
    client.send("control", { action: "stop" });
    await new Promise<void>((resolve) =>
      (function poll() {
        worker.interrupts > 0 ? resolve() : setImmediate(poll);
      })(),
    );
    worker.emit({ type: "interaction.withdrawn", id: "perm-1" }, { type: "turn.finished", outcome: "stopped" });
    const done = await client.next("done", from);
    expect(done.event.data).to.deep.equal({ success: false, reason: "stopped_by_user" });
    expect(worker.answers).to.deep.equal([]);
    client.send("permission_response", { id: "perm-1", allowed: true });
    expect((await client.next("error", from)).event.data).to.deep.include({ code: "INVALID_MESSAGE" });
    // The next turn runs on the same worker.
    const next = await runPlainTurn(client, "m2", "again");
    expect(rig.factory.workers).to.have.length(1);
    worker.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", next);
  });

  it("a stop sent right behind its input stops that input's turn; a stop with no turn gets state(idle)", async () => {
    const { client } = await open();
    rig.factory.interruptAcks = false;
    client.send("input", { content: "go" }, "m1");
    client.send("control", { action: "stop" });
    const stateOrDone = (e: ServerEnvelope) =>
      e.event.type === "done" || (e.event.type === "state" && (e.event.data as { state: string }).state === "idle");
    const first = await client.next(stateOrDone);
    expect(first.event).to.deep.equal({ type: "done", data: { success: false, reason: "stopped_by_user" } });
    const from = client.mark();
    client.send("control", { action: "stop" });
    expect((await client.next("state", from)).event.data).to.deep.equal({ state: "idle", message: "no turn to stop" });
  });

  it("a stop the worker does not acknowledge kills it; the turn still ends stopped", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "go");
    rig.factory.last.interruptAcks = false;
    client.send("control", { action: "stop" });
    const done = await client.next("done", from);
    expect(done.event.data).to.deep.equal({ success: false, reason: "stopped_by_user" });
    expect(rig.factory.last.killed).to.equal(true);
  });

  it("a permission answer reaches the worker in neutral form; a question answer too", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "go");
    const worker = rig.factory.last;
    worker.emit({
      type: "interaction.requested",
      id: "p1",
      kind: "permission",
      payload: { tool_name: "Bash", input: {} },
    });
    await client.next("permission_request", from);
    client.send("permission_response", { id: "p1", allowed: false, reason: "not today" });
    worker.emit({
      type: "interaction.requested",
      id: "q1",
      kind: "question",
      payload: {
        tool_name: "AskUserQuestion",
        questions: [{ question: "Color?", header: "C", options: [{ label: "Red" }], multiSelect: false }],
      },
    });
    const q = await client.next("question_request", from);
    expect(q.event.data).to.deep.equal({
      id: "q1",
      tool_name: "AskUserQuestion",
      questions: [{ question: "Color?", header: "C", options: [{ label: "Red" }], multi_select: false }],
    });
    client.send("question_response", { id: "q1", answers: { "Color?": "Red" } });
    while (worker.answers.length < 2) await new Promise((r) => setImmediate(r));
    expect(worker.answers).to.deep.equal([
      { id: "p1", answer: { kind: "permission", allowed: false, reason: "not today" } },
      { id: "q1", answer: { kind: "question", answers: { "Color?": "Red" } } },
    ]);
    worker.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", from);
  });

  it("maps reasoning, tool calls and results, steps and elicitations to their AEP kinds", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "think");
    const worker = rig.factory.last;
    worker.beginTurn();
    worker.emit(
      { type: "reasoning.delta", blockId: "r", text: "hmm" },
      { type: "reasoning.completed", blockId: "r", text: "hmm" },
      { type: "reasoning.completed", blockId: "r2", text: "not streamed" },
      { type: "tool.called", id: "t1", name: "Read", input: { file_path: "/x" } },
      { type: "tool.result", id: "t1", output: "boom", isError: true },
      { type: "step", name: "api_retry", detail: { attempt: 1 } },
      { type: "text.completed", blockId: "b", text: "whole" },
      {
        type: "interaction.requested",
        id: "e1",
        kind: "elicitation",
        payload: { mcp_server_name: "srv", message: "Name?", requested_schema: { type: "object" } },
      },
    );
    const ask = await client.next("elicitation_request", from);
    expect(ask.event.data).to.deep.equal({
      id: "e1",
      mcp_server_name: "srv",
      message: "Name?",
      requested_schema: { type: "object" },
    });
    client.send("elicitation_response", { id: "e1", action: "accept", content: { name: "Ada" } });
    while (worker.answers.length < 1) await new Promise((r) => setImmediate(r));
    expect(worker.answers[0]).to.deep.equal({
      id: "e1",
      answer: { kind: "elicitation", action: "accept", content: { name: "Ada" } },
    });
    worker.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", from);
    expect(client.of("reasoning", from)).to.deep.equal([
      { id: "r", content: "hmm" },
      { id: "r2", content: "not streamed" },
    ]);
    expect(client.of("tool_call", from)).to.deep.equal([{ id: "t1", name: "Read", input: { file_path: "/x" } }]);
    expect(client.of("tool_result", from)).to.deep.equal([
      { id: "t1", output: "boom", error: "boom", status: "failed" },
    ]);
    expect(client.of("step", from)).to.deep.equal([
      { id: "step_api_retry", step_type: "api_retry", name: "api_retry", output: { attempt: 1 } },
    ]);
    expect(client.kinds(from).filter((k) => k.startsWith("message"))).to.deep.equal([
      "message.start",
      "message.end",
      "message",
    ]);
  });

  it("a worker crash mid-turn is error(WORKER_CRASH) then done; the next input resumes the worker's session", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "go");
    const first = rig.factory.last;
    first.emit(
      { type: "worker.ready", workerSessionId: first.options.workerSessionId },
      { type: "text.delta", blockId: "b", text: "par" },
    );
    first.emit({ type: "worker.exited", code: 1, signal: null, crashed: true });
    await client.next("runtime.execution.failed", from);
    expect(client.kinds(from).slice(-6)).to.deep.equal([
      "message.delta",
      "message.end",
      "error",
      "done",
      "state(idle)",
      "runtime.execution.failed",
    ]);
    expect(client.of("error", from)[0]).to.deep.include({ code: "WORKER_CRASH" });
    expect(client.of("done", from)[0]).to.deep.equal({ success: false });
    expect(client.of("runtime.execution.failed", from)[0]).to.deep.include({ error_code: "WORKER_CRASH" });
    // Late events of the dead process change nothing.
    first.emit({ type: "text.delta", blockId: "late", text: "ghost" });

    const next = await runPlainTurn(client, "m2", "again");
    const second = rig.factory.last;
    expect(second).to.not.equal(first);
    expect(second.options).to.deep.include({ workerSessionId: first.options.workerSessionId, resume: true });
    second.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", next);
    expect(client.kinds().filter((k) => k === "message.delta")).to.have.length(1);
  });

  it("an api error is error then done(success false) with the runtime failure after it", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "go");
    rig.factory.last.emit(
      { type: "turn.error", code: "api_error", message: "API Error: 500" },
      { type: "turn.finished", outcome: "api_error", message: "API Error: 500" },
    );
    await client.next("runtime.execution.failed", from);
    expect(client.kinds(from).slice(-4)).to.deep.equal(["error", "done", "state(idle)", "runtime.execution.failed"]);
    const executionId = client.of("input.ack", from)[0]!.execution_id;
    expect(client.of("error", from)).to.deep.equal([
      { code: "INTERNAL_ERROR", message: "API Error: 500", execution_id: executionId },
    ]);
  });

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
