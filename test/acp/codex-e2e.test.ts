// AEP v1 end to end with the `codex` worker: a real WebSocket client, the real gateway process, the REAL Codex agent
// over ACP (@zed-industries/codex-acp, pinned) and our fake OpenAI Responses server replaying the scripted turns of
// test/fixtures/codex-acp. The same scenarios as the Claude Code e2e tests where they apply, plus what only ACP
// agents send: plan, tool_update, and the tool_call/tool_result extension fields (title, kind, locations, diff).
import { expect } from "chai";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import { turn, useSessions } from "../aep/worker-rig.js";
import { CODEX_API_KEY, type CodexRig, scripted, startCodexRig } from "./codex-rig.js";

const PINNED_CODEX_ACP = "0.16.0";

const idOf = (e: ServerEnvelope) => (e.event.data as { id: string }).id;
/** A turn's last event: its runtime fact, after done. */
const settled = (e: ServerEnvelope) =>
  e.event.type === "runtime.execution.completed" || e.event.type === "runtime.execution.failed";
const lastInput = (rig: CodexRig) => JSON.stringify(rig.fake.requests.at(-1)!.body.input);

describe("AEP v1 end to end with the real Codex agent over ACP", function () {
  this.timeout(120_000);
  let rig: CodexRig;
  before(async () => {
    rig = await startCodexRig();
  });
  after(async () => {
    await rig?.dispose();
  });
  const session = useSessions(() => rig);

  it(`streams a plain turn as deltas, in the order of docs/protocol/aep.md §8, from codex-acp ${PINNED_CODEX_ACP}`, async () => {
    rig.fake.enqueue(scripted("plain"));
    const { client, state } = await session();
    expect(state.event.data).to.deep.equal({ state: "created" });
    const from = await turn(client, "Say hello");
    const kinds = client.kinds(from).filter((k) => k !== "raw" && k !== "step" && k !== "context_usage");
    expect(kinds).to.deep.equal([
      "input.ack",
      "state(running)",
      "input.ack",
      "runtime.execution.started",
      "message.start",
      ...Array<string>(5).fill("message.delta"),
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
    ]);
    expect(client.of("message", from)[0]).to.deep.include({ role: "assistant", content: "Hello from the fake model." });
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    // An upgrade of the pinned agent must fail here loudly: re-check the scripted turns and the mapping first.
    const ready = client.of("raw", from).find((r) => r.kind === "worker.ready");
    expect(ready?.raw).to.deep.include({ version: PINNED_CODEX_ACP, permission_mode: "read-only" });
    expect(client.of("context_usage", from)[0]).to.have.property("max_tokens").that.is.greaterThan(0);
    const request = rig.fake.requests.at(-1)!;
    expect(request.headers.authorization).to.equal(`Bearer ${CODEX_API_KEY}`);
    expect(lastInput(rig)).to.contain("Say hello");
  });

  it("streams the model's reasoning summary as reasoning events before the answer", async () => {
    rig.fake.enqueue(scripted("thinking"));
    const { client } = await session();
    const from = await turn(client, "Think, then greet");
    const thought = client
      .of("reasoning", from)
      .map((r) => r.content)
      .join("");
    expect(thought).to.contain("Weighing the greeting.");
    const kinds = client.kinds(from);
    expect(kinds.indexOf("reasoning")).to.be.lessThan(kinds.indexOf("message.start"));
    expect(client.of("message", from).map((m) => m.content)).to.deep.equal(["Hi."]);
  });

  it("a plan is sent as `plan`; a command asks permission: tool_update(pending), then allow runs it", async () => {
    rig.fake.enqueue(scripted("plan"), scripted("touchAllowed"), scripted("created"));
    const { client, workdir } = await session();
    const from = client.mark();
    client.send("input", { content: "make allowed.txt" });
    const ask = await client.next("permission_request", from);
    expect(client.of("plan", from)[0]).to.deep.equal({
      items: [
        { content: "Create the file", priority: "medium", status: "in_progress" },
        { content: "Report back", priority: "medium", status: "pending" },
      ],
    });
    expect(ask.event.data).to.deep.include({ tool_name: "execute", description: "touch allowed.txt" });
    expect(client.of("tool_update", from)[0]).to.deep.include({ id: "call_touch_allowed", status: "pending" });
    client.send("permission_response", { id: idOf(ask), allowed: true });
    await client.next("runtime.execution.completed", from);

    expect(client.of("tool_call", from).find((c) => c.id === "call_touch_allowed")).to.deep.include({
      name: "execute",
      title: "touch allowed.txt",
      kind: "execute",
    });
    const result = client.of("tool_result", from).find((r) => r.id === "call_touch_allowed");
    expect(result).to.deep.include({ status: "completed" });
    expect(result).to.not.have.property("error");
    expect(existsSync(join(workdir, "allowed.txt"))).to.equal(true);
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    const kinds = client.kinds(from);
    expect(kinds.indexOf("tool_update")).to.be.lessThan(kinds.indexOf("permission_request"));
  });

  it("deny selects the agent's reject option: Codex aborts its turn (done interrupted) and runs nothing", async () => {
    rig.fake.enqueue(scripted("touchDenied"));
    const { client, workdir } = await session();
    const from = client.mark();
    client.send("input", { content: "make denied.txt" });
    const ask = await client.next("permission_request", from);
    client.send("permission_response", { id: idOf(ask), allowed: false, reason: "not this one" });
    await client.next(settled, from);
    expect(client.of("done", from)[0]).to.deep.include({ success: false, reason: "interrupted" });
    expect(client.of("tool_result", from)).to.deep.equal([]);
    expect(existsSync(join(workdir, "denied.txt"))).to.equal(false);
  });

  it("an edit is a tool_call with kind edit and its location, and its tool_result carries the diff", async () => {
    rig.fake.enqueue(scripted("patch"), scripted("created"));
    const { client, workdir } = await session();
    const from = client.mark();
    client.send("input", { content: "write notes.txt" });
    const ask = await client.next("permission_request", from);
    expect(ask.event.data).to.deep.include({ tool_name: "edit" });
    client.send("permission_response", { id: idOf(ask), allowed: true });
    await client.next("runtime.execution.completed", from);
    const file = join(workdir, "notes.txt");
    expect(client.of("tool_call", from)[0]).to.deep.include({
      id: "call_patch",
      kind: "edit",
      locations: [{ path: file }],
    });
    expect(client.of("tool_result", from)[0]).to.deep.include({
      id: "call_patch",
      status: "completed",
      diff: { path: file, old_text: "", new_text: "first line\n" },
    });
    expect(existsSync(file)).to.equal(true);
  });

  it("stop mid-stream sends session/cancel: done(stopped_by_user); the next turn runs on the same agent", async () => {
    rig.fake.enqueue(scripted("slow"), scripted("backAgain"));
    const { client } = await session();
    const from = client.mark();
    client.send("input", { content: "stream slowly" });
    await client.next((e) => e.event.type === "message.delta" && client.of("message.delta", from).length >= 2, from);
    const pids = rig.workerPids();
    client.send("control", { action: "stop" });
    await client.next(settled, from);
    expect(client.of("done", from)).to.have.length(1);
    expect(client.of("done", from)[0]).to.deep.include({ success: false, reason: "stopped_by_user" });
    expect(client.of("error", from)).to.deep.equal([]);

    const next = await turn(client, "and now?");
    expect(client.of("done", next)[0]).to.deep.include({ success: true });
    expect(client.of("message", next).map((m) => m.content)).to.deep.equal(["Back again."]);
    expect(rig.workerPids()).to.deep.equal(pids);
    expect(lastInput(rig)).to.contain("stream slowly").and.to.contain("and now?");
  });

  it("an agent killed mid-turn ends the turn with an error and done; the next input resumes its session", async () => {
    rig.fake.enqueue(scripted("created"), scripted("slow"), scripted("backAgain"));
    const { client } = await session();
    const others = rig.workerPids();
    await turn(client, "Remember the word pineapple");
    const [pid] = rig.workerPids().filter((p) => !others.includes(p));
    const from = client.mark();
    client.send("input", { content: "Now write an essay" });
    await client.next("message.delta", from);
    process.kill(-pid!, "SIGKILL");
    await client.next(settled, from);
    const error = client.of("error", from)[0];
    expect(["WORKER_CRASH", "PROCESS_SIGKILL"]).to.include(error?.code);
    expect(client.of("done", from)[0]).to.deep.include({ success: false });

    const next = await turn(client, "What was the word?");
    expect(client.of("done", next)[0]).to.deep.include({ success: true });
    expect(rig.workerPids()).to.not.include(pid);
    expect(client.of("step", next).map((s) => s.step_type)).to.not.include("resume_unavailable");
    expect(lastInput(rig)).to.contain("Remember the word pineapple").and.to.contain("What was the word?");
  });

  it("a client that reconnects mid-turn gets state(running) and the rest of the turn, seq still rising", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    rig.fake.enqueue(scripted("slow", { release: released }), scripted("backAgain"));
    const key = `key-${Date.now()}`;
    const { client, workdir, checker } = await session({ session_key: key });
    const from = client.mark();
    client.send("input", { content: "tell me slowly" });
    await client.next("message.delta", from);
    const lastSeq = client.received.at(-1)!.seq;
    await client.drop();

    const again = await session({ session_key: key, workdir }, checker);
    expect(again.state.session_id).to.equal(client.sessionId);
    expect(again.state.event.data).to.deep.include({ state: "running" });
    expect(again.state.seq).to.be.greaterThan(lastSeq);
    release();
    await again.client.next("runtime.execution.completed");
    expect(again.client.of("message")[0]).to.deep.include({ content: "tick tock tick tock tick tock" });
    expect(again.client.of("done")[0]).to.deep.include({ success: true });

    const next = await turn(again.client, "and after?");
    expect(again.client.of("done", next)[0]).to.deep.include({ success: true });
  });
});
