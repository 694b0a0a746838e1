// AEP v1 end to end: a real WebSocket client, the real gateway process, the REAL Claude Code CLI (pinned 2.1.328)
// and our fake Anthropic API. Every envelope received goes through the OrderingChecker. Runs as root on CI, so
// nothing relies on --dangerously-skip-permissions: permissions travel over the stdio prompt tool.
import { expect } from "chai";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import { startAepRig, WORKER_API_KEY, type AepRig } from "./e2e-rig.js";
import { turn, useSessions } from "./worker-rig.js";

const PINNED_CLI = "2.1.328";

const isAck = (status: string) => (e: ServerEnvelope) =>
  e.event.type === "input.ack" && (e.event.data as { status: string }).status === status;
const bash = (command: string) => ({
  blocks: [
    { type: "text" as const, text: "Using Bash." },
    { type: "tool_use" as const, name: "Bash", input: { command, description: "Run it" } },
  ],
});

describe("AEP v1 end to end with the real Claude Code CLI", function () {
  this.timeout(120_000);
  let rig: AepRig;
  before(async () => {
    rig = await startAepRig();
  });
  after(async () => {
    await rig?.dispose();
  });
  const session = useSessions(() => rig);

  it(`streams a plain turn as deltas, in the order of docs/protocol/aep.md §8, from CLI ${PINNED_CLI}`, async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "Hello from the fake model." }], chunkSize: 6 });
    const { client, state } = await session();
    expect(state.event.data).to.deep.equal({ state: "created" });
    const from = await turn(client, "Say hello");
    const kinds = client.kinds(from).filter((k) => k !== "raw");
    expect(kinds).to.deep.equal([
      "input.ack",
      "state(running)",
      "input.ack",
      "runtime.execution.started",
      "message.start",
      "message.delta",
      "message.delta",
      "message.delta",
      "message.delta",
      "message.delta",
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
    ]);
    expect(
      client
        .of("message.delta", from)
        .map((d) => d.content)
        .join(""),
    ).to.equal("Hello from the fake model.");
    expect(client.of("message", from)[0]).to.deep.include({ role: "assistant", content: "Hello from the fake model." });
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    // An upgrade of the pinned CLI must fail here loudly: re-record the fixtures and re-check the notes first.
    const ready = client.of("raw", from).find((r) => r.kind === "worker.ready");
    expect(ready?.raw).to.deep.include({ version: PINNED_CLI, permission_mode: "default" });
    expect(rig.fake.messageRequests().at(-1)!.body.messages[0].content).to.deep.include({
      type: "text",
      text: "Say hello",
    });
  });

  it("a tool call asks permission: allow runs it, deny does not", async () => {
    rig.fake.enqueue(
      bash("touch allowed.txt"),
      { blocks: [{ type: "text", text: "Created." }] },
      bash("touch denied.txt"),
      { blocks: [{ type: "text", text: "Not created." }] },
    );
    const { client, workdir } = await session();

    let from = client.mark();
    client.send("input", { content: "make allowed.txt" });
    const ask = await client.next("permission_request", from);
    expect(ask.event.data).to.deep.include({
      tool_name: "Bash",
      input_raw: { command: "touch allowed.txt", description: "Run it" },
    });
    client.send("permission_response", { id: (ask.event.data as { id: string }).id, allowed: true });
    await client.next("runtime.execution.completed", from);
    expect(client.kinds(from)).to.include.members(["tool_call", "permission_request", "tool_result", "done"]);
    expect(client.of("tool_result", from)[0]).to.not.have.property("error");
    expect(existsSync(join(workdir, "allowed.txt"))).to.equal(true);

    from = client.mark();
    client.send("input", { content: "make denied.txt" });
    const ask2 = await client.next("permission_request", from);
    client.send("permission_response", {
      id: (ask2.event.data as { id: string }).id,
      allowed: false,
      reason: "not this one",
    });
    await client.next("runtime.execution.completed", from);
    expect(client.of("tool_result", from)[0]).to.deep.include({ error: "not this one" });
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    expect(existsSync(join(workdir, "denied.txt"))).to.equal(false);
  });

  it("a question is asked as question_request and answered with the chosen label", async () => {
    const question = {
      questions: [
        {
          question: "Which color?",
          header: "Color",
          options: [
            { label: "Red", description: "warm" },
            { label: "Blue", description: "cool" },
          ],
          multiSelect: false,
        },
      ],
    };
    rig.fake.enqueue(
      { blocks: [{ type: "tool_use", name: "AskUserQuestion", input: question }] },
      { blocks: [{ type: "text", text: "Blue it is." }] },
    );
    const { client } = await session();
    const from = client.mark();
    client.send("input", { content: "ask me" });
    const q = await client.next("question_request", from);
    expect(q.event.data).to.deep.include({ tool_name: "AskUserQuestion" });
    expect((q.event.data as { questions: unknown[] }).questions).to.deep.equal([
      {
        question: "Which color?",
        header: "Color",
        options: [
          { label: "Red", description: "warm" },
          { label: "Blue", description: "cool" },
        ],
        multi_select: false,
      },
    ]);
    client.send("question_response", { id: (q.event.data as { id: string }).id, answers: { "Which color?": "Blue" } });
    await client.next("runtime.execution.completed", from);
    expect(JSON.stringify(rig.fake.messageRequests().at(-1)!.body.messages)).to.contain("Blue");
    expect(client.of("message", from).map((m) => m.content)).to.deep.equal(["Blue it is."]);
  });

  it("stop mid-stream ends the turn with done(stopped_by_user); the next turn runs on the same worker", async () => {
    rig.fake.enqueue(
      { blocks: [{ type: "text", text: "tick tock tick tock tick tock" }], chunkSize: 5, holdAfterDeltas: 2 },
      { blocks: [{ type: "text", text: "Back again." }] },
    );
    const { client } = await session();
    const from = client.mark();
    client.send("input", { content: "stream slowly" });
    await client.next((e) => e.event.type === "message.delta" && client.of("message.delta", from).length >= 2, from);
    const pids = rig.workerPids();
    client.send("control", { action: "stop" });
    await client.next("runtime.execution.failed", from);
    expect(client.of("runtime.execution.completed", from), "completed means success").to.deep.equal([]);
    expect(client.of("runtime.execution.failed", from)[0]).to.not.have.property("error_code");
    expect(client.of("done", from)).to.have.length(1);
    expect(client.of("done", from)[0]).to.deep.include({ success: false, reason: "stopped_by_user" });
    expect(client.of("error", from)).to.deep.equal([]);

    const next = await turn(client, "and now?");
    expect(client.of("done", next)[0]).to.deep.include({ success: true });
    expect(rig.workerPids()).to.deep.equal(pids);
    expect(JSON.stringify(rig.fake.messageRequests().at(-1)!.body.messages)).to.contain("stream slowly");
  });

  it("stop while a permission is open withdraws it; a late answer is refused", async () => {
    rig.fake.enqueue(bash("touch never.txt"));
    const { client, workdir } = await session();
    const from = client.mark();
    client.send("input", { content: "try the tool" });
    const ask = await client.next("permission_request", from);
    client.send("control", { action: "stop" });
    await client.next("runtime.execution.failed", from);
    expect(client.of("runtime.execution.completed", from), "completed means success").to.deep.equal([]);
    expect(client.of("runtime.execution.failed", from)[0]).to.not.have.property("error_code");
    expect(client.of("done", from)).to.have.length(1);
    expect(client.of("done", from)[0]).to.deep.include({ success: false, reason: "stopped_by_user" });
    const late = client.mark();
    client.send("permission_response", { id: (ask.event.data as { id: string }).id, allowed: true });
    expect((await client.next("error", late)).event.data).to.deep.include({ code: "INVALID_MESSAGE" });
    expect(existsSync(join(workdir, "never.txt"))).to.equal(false);
  });

  it("an input sent twice with the same id runs once; the same id with another payload is INVALID_MESSAGE", async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "Only once." }] });
    const { client } = await session();
    const before = rig.fake.messageRequests().length;
    const from = await turn(client, "do it once", "retry-me");
    const exec = client.of("input.ack", from)[0]!.execution_id;
    client.send("input", { content: "do it once" }, "retry-me");
    const dup = await client.next(
      (e) => e.event.type === "input.ack" && (e.event.data as { duplicate?: boolean }).duplicate === true,
      from,
    );
    expect(dup.event.data).to.deep.equal({
      client_message_id: "retry-me",
      execution_id: exec,
      status: "delivered",
      duplicate: true,
    });
    client.send("input", { content: "do something else" }, "retry-me");
    expect((await client.next("error", from)).event.data).to.deep.include({ code: "INVALID_MESSAGE" });
    expect(rig.fake.messageRequests().length - before).to.equal(1);
    expect(client.of("done", from)).to.have.length(1);
  });

  it("a client too slow to read loses deltas, never anything else: done.dropped is set and `message` has the whole text", async () => {
    // ~12 MB of deltas against a paused socket: more than the kernel buffers and the queue together hold.
    const block = (i: number) => ({ type: "text" as const, text: `${i}:`.padEnd(1_000_000, "abcdefghij") });
    rig.fake.enqueue({ blocks: Array.from({ length: 12 }, (_, i) => block(i)), chunkSize: 8_000 });
    const { client } = await session();
    const doneBefore = rig.gateway.stderrLines().filter((l) => l.includes('"msg":"aep turn done"')).length;
    const from = client.mark();
    client.send("input", { content: "flood me" });
    await client.next(isAck("delivered"), from);
    client.pause();
    await rig.turnsDone(doneBefore + 1);
    client.resume();
    await client.next("runtime.execution.completed", from);
    expect(client.of("done", from)[0]).to.deep.include({ success: true, dropped: true });
    const messages = client.of("message", from);
    expect(messages).to.have.length(12);
    messages.forEach((m, i) => {
      expect(m.content).to.equal(block(i).text);
    });
    const deltas = client.of("message.delta", from).reduce((n, d) => n + d.content.length, 0);
    expect(deltas).to.be.lessThan(12_000_000);
    expect(client.kinds(from).filter((k) => k === "message.start" || k === "message.end")).to.have.length(24);
  });

  it("an upstream 500 is error then done(success false), never assistant text", async () => {
    rig.fake.enqueue(
      { status: 500, error: { message: "injected failure" } },
      { status: 500, error: { message: "injected failure" } },
    );
    const { client } = await session();
    const from = await turn(client, "this will fail");
    const terminal = client
      .kinds(from)
      .filter((k) =>
        ["error", "done", "message", "runtime.execution.completed", "runtime.execution.failed"].includes(k),
      );
    expect(terminal).to.deep.equal(["error", "done", "runtime.execution.failed"]);
    expect(client.of("done", from)[0]).to.deep.include({ success: false });
    expect(client.of("error", from)[0]!.message).to.contain("500");
    expect(client.of("step", from).map((s) => s.step_type)).to.include("api_retry");
  });

  it("a provider 500 whose body quotes the worker's API key reaches the client redacted", async () => {
    const error = { message: `invalid request for key ${WORKER_API_KEY} (echoed by the provider)` };
    rig.fake.enqueue({ status: 500, error }, { status: 500, error });
    const { client } = await session();
    const frames: string[] = [];
    client.ws.on("message", (data) => frames.push(data.toString()));
    const from = await turn(client, "this will fail");
    expect(client.of("error", from)[0]!.message).to.contain("[redacted] (echoed by the provider)");
    expect(frames.length).to.be.greaterThan(0);
    expect(frames.filter((f) => f.includes(WORKER_API_KEY))).to.deep.equal([]);
    expect(rig.gateway.stderrLines().filter((l) => l.includes(WORKER_API_KEY))).to.deep.equal([]);
  });

  it("a worker killed mid-turn is error(PROCESS_SIGKILL) + done; the next input resumes its session with the history", async () => {
    rig.fake.enqueue(
      { blocks: [{ type: "text", text: "Noted." }] },
      { blocks: [{ type: "text", text: "an essay that never ends" }], chunkSize: 4, holdAfterDeltas: 1 },
      { blocks: [{ type: "text", text: "The word was pineapple." }] },
    );
    const { client } = await session();
    const others = rig.workerPids();
    await turn(client, "Remember the word pineapple");
    const [pid] = rig.workerPids().filter((p) => !others.includes(p));
    const from = client.mark();
    client.send("input", { content: "Now write an essay" });
    await client.next("message.delta", from);
    process.kill(-pid!, "SIGKILL");
    await client.next("runtime.execution.failed", from);
    expect(client.kinds(from).slice(-4)).to.deep.equal(["error", "done", "state(idle)", "runtime.execution.failed"]);
    expect(client.of("error", from)[0]).to.deep.include({ code: "PROCESS_SIGKILL" });
    expect(client.of("runtime.execution.failed", from)[0]).to.deep.include({ error_code: "PROCESS_SIGKILL" });
    expect(client.of("runtime.execution.completed", from)).to.deep.equal([]);
    expect(client.of("done", from)[0]).to.deep.include({ success: false });

    const next = await turn(client, "What was the word?");
    expect(client.of("done", next)[0]).to.deep.include({ success: true });
    expect(rig.workerPids()).to.not.include(pid);
    const history = JSON.stringify(rig.fake.messageRequests().at(-1)!.body.messages);
    expect(history).to.contain("Remember the word pineapple").and.to.contain("What was the word?");
  });

  it("worker_command returns context usage and MCP status from the CLI; an unknown command is NOT_SUPPORTED", async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "Ready." }] });
    const { client } = await session();
    await turn(client, "hello");
    let from = client.mark();
    const asked = client.send("worker_command", { command: "context_usage" });
    const usage = (await client.next("context_usage", from)).event.data as Record<string, unknown>;
    expect(usage.total_tokens).to.be.a("number").greaterThan(0);
    expect(usage.max_tokens)
      .to.be.a("number")
      .greaterThan(usage.total_tokens as number);
    expect(usage.percentage).to.be.a("number");
    expect(usage.categories).to.be.an("array").that.is.not.empty;
    from = client.mark();
    client.send("worker_command", { command: "mcp_status" });
    expect((await client.next("mcp_status", from)).event.data).to.deep.equal({ servers: [] });
    from = client.mark();
    const unknown = client.send("worker_command", { command: "teleport" });
    expect((await client.next("error", from)).event.data).to.deep.include({
      code: "NOT_SUPPORTED",
      client_message_id: unknown,
    });
    expect(asked).to.not.equal(unknown);
  });

  it("a client that re-attaches after its turn ended, with last_seq, gets the missed done and runtime fact with their seqs", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    rig.fake.enqueue({
      blocks: [{ type: "text", text: "an answer finished while nobody listened" }],
      chunkSize: 8,
      holdAfterDeltas: 1,
      release: released,
    });
    const key = `key-${Date.now()}-after`;
    const { client, workdir } = await session({ session_key: key });
    const doneBefore = rig.gateway.stderrLines().filter((l) => l.includes('"msg":"aep turn done"')).length;
    const from = client.mark();
    client.send("input", { content: "answer while I am away" });
    await client.next("message.delta", from);
    const lastSeq = client.received.at(-1)!.seq;
    await client.drop();
    release();
    await rig.turnsDone(doneBefore + 1);

    // Unchecked: the replay of what it missed comes before the state answer, which the ordering checker cannot follow.
    const again = await rig.open({ session_key: key, workdir, last_seq: lastSeq });
    // The replay holds the turn's own state(idle) before the fact; the state answer to this attach comes after it.
    const fact = await again.client.next("runtime.execution.completed");
    await again.client.next((e) => e.event.type === "state" && e.seq > fact.seq && client.sessionId === e.session_id);
    const seqs = again.client.received.map((e) => e.seq);
    expect(seqs[0]).to.be.greaterThan(lastSeq);
    expect(seqs, "replayed in order, before the state answer").to.deep.equal([...seqs].sort((a, b) => a - b));
    const kinds = again.client.kinds();
    expect(kinds.filter((k) => k !== "raw")).to.deep.equal([
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
      "state(idle)",
    ]);
    expect(again.client.of("message")[0]).to.deep.include({ content: "an answer finished while nobody listened" });
    expect(again.client.of("done")[0]).to.deep.include({ success: true, dropped: true });
    expect(again.client.of("runtime.execution.completed")).to.have.length(1);
    await again.client.close();
  });

  it("a client that reconnects mid-turn gets state(running) and the rest of the turn, seq still rising", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    rig.fake.enqueue({
      blocks: [{ type: "text", text: "first half, second half" }],
      chunkSize: 6,
      holdAfterDeltas: 1,
      release: released,
    });
    const key = `key-${Date.now()}`;
    const { client, workdir, checker } = await session({ session_key: key });
    const from = client.mark();
    client.send("input", { content: "tell me in two halves" });
    await client.next("message.delta", from);
    const lastSeq = client.received.at(-1)!.seq;
    await client.drop();

    const again = await session({ session_key: key, workdir }, checker);
    expect(again.state.session_id).to.equal(client.sessionId);
    expect(again.state.event.data).to.deep.include({ state: "running" });
    expect(again.state.seq).to.be.greaterThan(lastSeq);
    release();
    await again.client.next("runtime.execution.completed");
    // Joined mid-message without a last seq: its start first, and done says deltas were missed.
    expect(again.client.kinds().slice(0, 2)).to.deep.equal(["state(running)", "message.start"]);
    expect(again.client.of("message")[0]).to.deep.include({ content: "first half, second half" });
    expect(again.client.of("done")).to.deep.equal([
      { success: true, stats: again.client.of("done")[0]!.stats, dropped: true },
    ]);
    expect(checker.turnsClosed).to.equal(1);

    rig.fake.enqueue({ blocks: [{ type: "text", text: "Still here." }] });
    const next = await turn(again.client, "and after?");
    expect(again.client.of("done", next)[0]).to.deep.include({ success: true });
  });
});
