// The generic `acp` worker against a real ACP peer: test/support/scripted-acp-agent.ts, a separate process built on
// the SDK's agent side, whose turns are scripted by the prompt's text. The worker's whole surface is driven through
// its factory as the AEP core drives it: start, send, answer, interrupt, close, kill — and every WorkerEvent it emits
// is checked, including the endings a crashing, failing or hanging agent forces.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type AcpFactoryOptions, createAcpWorkerFactory } from "../../workers/acp/factory.js";
import type { Worker, WorkerEvent } from "../../workers/types.js";
import { waitUntil } from "../support/util.js";

const agentScript = fileURLToPath(new URL("../support/scripted-acp-agent.ts", import.meta.url));
/** tsx by URL: the agent runs in the workdir, where a bare `--import tsx` would not resolve. */
const tsx = import.meta.resolve("tsx");

type Of<T extends WorkerEvent["type"]> = Extract<WorkerEvent, { type: T }>;

class Run {
  readonly events: WorkerEvent[] = [];
  constructor(readonly worker: Worker) {}
  of<T extends WorkerEvent["type"]>(type: T): Array<Of<T>> {
    return this.events.filter((e): e is Of<T> => e.type === type);
  }
  types(): string[] {
    return this.events.map((e) => e.type);
  }
  async until(type: WorkerEvent["type"], count = 1, timeoutMs = 20_000): Promise<void> {
    await waitUntil(
      () => this.of(type).length >= count,
      timeoutMs,
      () => `no ${count}× ${type}; got ${this.types().join(" ")}`,
    );
  }
  /** Sends one input and waits for its turn to finish. */
  async turn(content: string): Promise<WorkerEvent[]> {
    const from = this.events.length;
    const finished = this.of("turn.finished").length;
    await this.worker.send({ inputId: `in-${from}`, content });
    await this.until("turn.finished", finished + 1);
    return this.events.slice(from);
  }
}

describe("the ACP worker against a scripted ACP agent", function () {
  this.timeout(60_000);
  let root: string;
  const workers: Worker[] = [];

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "byok-acp-worker-"));
  });
  afterEach(() => {
    for (const w of workers.splice(0)) w.kill();
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  function factory(options: AcpFactoryOptions = {}, env: Record<string, string> = {}) {
    return createAcpWorkerFactory("acp", {
      command: process.execPath,
      args: ["--import", tsx, agentScript],
      env: { ...env, TMPDIR: root },
      ...options,
    });
  }

  function start(f = factory(), workerSessionId = "ws-1", resume = false): Run {
    let run!: Run;
    const worker = f.start({ workdir: root, workerSessionId, resume }, (event) => run.events.push(event));
    run = new Run(worker);
    workers.push(worker);
    return run;
  }

  it("opens a session in the workdir and maps chunks to text and reasoning blocks, end_turn to completed", async () => {
    const run = start();
    const turn = await run.turn("plain");
    expect(run.of("worker.ready")[0]).to.deep.include({ version: "1.0.0", permissionMode: "ask" });
    expect(turn.map((e) => e.type)).to.deep.equal([
      "worker.ready",
      "turn.started",
      "input.started",
      "reasoning.delta",
      "reasoning.completed",
      "text.delta",
      "text.delta",
      "text.completed",
      "turn.finished",
      "input.completed",
    ]);
    expect(run.of("text.completed")[0]).to.deep.include({ text: "Hello, world." });
    expect(run.of("turn.finished")[0]).to.deep.equal({ type: "turn.finished", outcome: "completed" });
  });

  it("maps mode, plan, tool call with locations, in-progress update with its diff, and the result with the diff", async () => {
    const run = start();
    const from = run.events.length;
    await run.worker.send({ inputId: "in-tools", content: "tools" });
    await run.until("interaction.requested");
    const ask = run.of("interaction.requested")[0]!;
    expect(ask).to.deep.include({ kind: "permission" });
    expect(ask.payload).to.deep.include({ tool_name: "edit", description: "Edit a.txt", tool_use_id: "t1" });
    await run.worker.answer(ask.id, { kind: "permission", allowed: true });
    await run.until("turn.finished");
    const diff = { path: "/project/a.txt", oldText: "old\n", newText: "new\n" };
    const events = run.events.slice(from);
    expect(events.find((e) => e.type === "mode.updated")).to.deep.equal({ type: "mode.updated", mode: "code" });
    expect(events.find((e) => e.type === "plan.updated")).to.deep.equal({
      type: "plan.updated",
      entries: [{ content: "Edit a.txt", priority: "high", status: "in_progress" }],
    });
    expect(run.of("tool.called")).to.deep.equal([
      {
        type: "tool.called",
        id: "t1",
        name: "edit",
        input: { path: "/project/a.txt" },
        title: "Edit a.txt",
        kind: "edit",
        locations: [{ path: "/project/a.txt", line: 3 }],
      },
    ]);
    const updates = run.of("tool.updated");
    expect(updates[0]).to.deep.include({ id: "t1", status: "in_progress", diff });
    expect(run.of("tool.result")).to.deep.equal([{ type: "tool.result", id: "t1", output: "", isError: false, diff }]);
    expect(run.of("text.completed").at(-1)).to.deep.include({ text: "chose yes" });
  });

  it("a deny selects the agent's reject option (reject_always when it offers no reject_once)", async () => {
    const run = start();
    await run.worker.send({ inputId: "in-deny", content: "tools" });
    await run.until("interaction.requested");
    await run.worker.answer(run.of("interaction.requested")[0]!.id, { kind: "permission", allowed: false });
    await run.until("turn.finished");
    expect(run.of("tool.result")[0]).to.deep.include({ id: "t1", isError: true });
    expect(run.of("text.completed").at(-1)).to.deep.include({ text: "chose never" });
  });

  it("stop reasons end the turn: max_tokens is limit, refusal and a prompt error are failed", async () => {
    const run = start();
    await run.turn("limit");
    await run.turn("refusal");
    await run.turn("fail");
    expect(run.of("turn.finished").map((f) => f.outcome)).to.deep.equal(["limit", "failed", "failed"]);
    expect(run.of("turn.finished")[2]!.message).to.contain("Internal error");
    expect(run.of("text.completed")[0]).to.deep.include({ text: "cut" });
  });

  it("interrupt sends session/cancel and is acknowledged by the cancelled stop reason; the agent stays", async () => {
    const run = start();
    await run.worker.send({ inputId: "in-slow", content: "slow" });
    await run.until("text.delta");
    expect(await run.worker.interrupt()).to.equal(true);
    await run.until("turn.finished");
    expect(run.of("turn.finished")[0]).to.deep.include({ outcome: "stopped" });
    const next = await run.turn("plain");
    expect(next.find((e) => e.type === "turn.finished")).to.deep.include({ outcome: "completed" });
  });

  it("an agent that ignores the cancel is not acknowledged within the bound (the core then kills it)", async () => {
    const run = start(factory({ interruptAckMs: 300 }));
    await run.worker.send({ inputId: "in-deaf", content: "deaf" });
    await run.until("text.delta");
    expect(await run.worker.interrupt()).to.equal(false);
    run.worker.kill();
    await run.until("worker.exited");
    expect(run.of("worker.exited")[0]).to.deep.include({ signal: "SIGKILL", crashed: true });
  });

  it("an agent that exits mid-turn is a crashed exit, never a finished turn; the gateway process lives on", async () => {
    const run = start();
    await run.worker.send({ inputId: "in-crash", content: "crash" });
    await run.until("worker.exited");
    expect(run.of("worker.exited")[0]).to.deep.include({ code: 3, crashed: true });
    expect(run.of("turn.finished")).to.deep.equal([]);
    expect(run.of("text.delta")).to.have.length(1);
  });

  it("an output line over maxMessageBytes closes the connection: the agent is killed, its exit ends the turn", async () => {
    const run = start(factory({ maxMessageBytes: 64 * 1024 }));
    await run.worker.send({ inputId: "in-flood", content: "flood" });
    await run.until("worker.exited");
    expect(run.of("step").map((s) => s.name)).to.include("connection_closed");
    expect(run.of("worker.exited")[0]).to.deep.include({ signal: "SIGKILL", crashed: true });
    expect(run.of("text.delta")).to.deep.equal([]);
  });

  it("an agent that never answers initialize fails the start within the bound: the input is refused", async () => {
    const run = start(factory({ startTimeoutMs: 500 }, { SCRIPTED_ACP_HANG: "initialize" }));
    const sent = run.worker.send({ inputId: "in-hang", content: "plain" });
    await sent.then(
      () => expect.fail("the input was accepted"),
      (err: Error) => expect(err.message).to.match(/cannot start the acp agent: .*within 500 ms/),
    );
    await run.until("worker.exited");
    expect(run.of("step").map((s) => s.name)).to.include("start_failed");
  });

  it("a command that does not exist, or none configured, refuses the input with why", async () => {
    const missing = start(factory({ command: join(root, "no-such-agent") }));
    await missing.worker.send({ inputId: "in-1", content: "plain" }).then(
      () => expect.fail("accepted"),
      (err: Error) => expect(err.message).to.contain("ENOENT"),
    );
    const unset = start(createAcpWorkerFactory("acp", {}));
    await unset.worker.send({ inputId: "in-2", content: "plain" }).then(
      () => expect.fail("accepted"),
      (err: Error) => expect(err.message).to.contain("workers.acp.command"),
    );
    await unset.until("worker.exited");
  });

  it("the next start of a worker session loads the agent's session, without showing its replayed history", async () => {
    const f = factory({}, { SCRIPTED_ACP_STATE: join(root, "agent-state.json") });
    const first = start(f, "ws-resume");
    await first.turn("remember pineapple");
    await first.worker.close();
    const second = start(f, "ws-resume", true);
    const turn = await second.turn("recall");
    expect(second.of("worker.ready")[0]!.workerSessionId).to.equal(first.of("worker.ready")[0]!.workerSessionId);
    expect(turn.filter((e) => e.type === "text.completed")).to.deep.equal([
      { type: "text.completed", blockId: "in-0:1", text: "the word was pineapple" },
    ]);
    expect(second.events.filter((e) => e.type === "raw")).to.deep.equal([]);
  });
});
