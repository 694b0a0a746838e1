// The AEP session core over a real WebSocket with a scripted worker: turn ordering, acks and the ledger, idempotent
// input, busy, stop, interactions, crash and resume (re-attach and restarts: session-reattach.test.ts). The worker
// is scripted here; test/aep/e2e runs the real CLI.
import { expect } from "chai";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import { runPlainTurn, useScriptedRig } from "./scripted-rig.js";

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
});
