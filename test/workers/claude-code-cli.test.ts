// The driver against the REAL Claude Code CLI (pinned 2.1.328) talking to our fake Anthropic API, with a fresh HOME,
// workdir and TMPDIR per test. Few and sequential: each CLI process costs ~0.5 s to start and ~190 MB.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { WorkerEvent } from "../../workers/types.js";
import { type CliRig, startCliRig } from "./cli-rig.js";

const pinnedVersion = "2.1.328";

const textOf = (events: WorkerEvent[]) => events.flatMap((e) => (e.type === "text.completed" ? [e.text] : []));

describe("claude-code driver with the real CLI", function () {
  this.timeout(60_000);
  let rig: CliRig;

  beforeEach(async () => {
    rig = await startCliRig();
  });
  afterEach(async () => {
    await rig.dispose();
  });

  it(`reports CLI ${pinnedVersion} and streams a plain turn as deltas; EOF then ends the process cleanly`, async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "Hello from the fake model." }], chunkSize: 6 });
    const sessionId = randomUUID();
    const { worker, log } = rig.start({ workerSessionId: sessionId });
    await worker.send({ inputId: "in-1", content: "Say hello" });

    const ready = await log.next("worker.ready");
    // An upgrade of the pinned CLI must fail here loudly: re-record the fixtures and re-check the notes first.
    expect(ready.version).to.equal(pinnedVersion);
    expect(ready).to.deep.include({ workerSessionId: sessionId, permissionMode: "default" });
    const done = await log.next("turn.finished");
    expect(done.outcome).to.equal("completed");

    const events = log.events();
    const deltas = events.filter((e) => e.type === "text.delta");
    expect(deltas.map((e) => (e.type === "text.delta" ? e.text : ""))).to.deep.equal([
      "Hello ",
      "from t",
      "he fak",
      "e mode",
      "l.",
    ]);
    expect(textOf(events)).to.deep.equal(["Hello from the fake model."]);
    const lifecycle = events.filter((e) => e.type.startsWith("input.") || e.type === "turn.started");
    expect(lifecycle.slice(0, 3)).to.deep.equal([
      { type: "input.queued", inputId: "in-1" },
      { type: "turn.started", inputId: "in-1" },
      { type: "input.started", inputId: "in-1", mode: "turn" },
    ]);
    expect(rig.fake.messageRequests()[0]?.body.messages[0].content).to.deep.include({
      type: "text",
      text: "Say hello",
    });
    expect(log.all.every((r) => r.generation === worker.generation)).to.equal(true);

    await worker.close();
    expect(await log.next("worker.exited")).to.deep.equal({
      type: "worker.exited",
      code: 0,
      signal: null,
      crashed: false,
    });
    expect(log.events().filter((e) => e.type === "input.completed")).to.deep.equal([
      { type: "input.completed", inputId: "in-1" },
    ]);
  });

  it("asks permission for Bash: allow runs the command, deny does not; a question is answered with its answers", async () => {
    const bash = (file: string) => ({
      blocks: [
        { type: "text" as const, text: "Using Bash." },
        { type: "tool_use" as const, name: "Bash", input: { command: `touch ${file}`, description: "Create a file" } },
      ],
    });
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
      bash("allowed.txt"),
      { blocks: [{ type: "text", text: "Created." }] },
      bash("denied.txt"),
      { blocks: [{ type: "text", text: "Not created." }] },
      { blocks: [{ type: "tool_use", name: "AskUserQuestion", input: question }] },
      { blocks: [{ type: "text", text: "Blue it is." }] },
    );
    const { worker, log } = rig.start({ workerSessionId: randomUUID() });

    await worker.send({ inputId: "allow", content: "touch allowed.txt" });
    const allowAsk = await log.next("interaction.requested");
    expect(allowAsk).to.deep.include({ kind: "permission" });
    expect(allowAsk.payload).to.deep.include({
      tool_name: "Bash",
      input: { command: "touch allowed.txt", description: "Create a file" },
    });
    expect(allowAsk.payload).to.have.property("tool_use_id").that.is.a("string");
    await worker.answer(allowAsk.id, { kind: "permission", allowed: true });
    expect(await log.next("tool.result")).to.deep.include({ isError: false });
    expect(await log.next("turn.finished")).to.deep.include({ outcome: "completed" });
    expect(existsSync(join(rig.workdir, "allowed.txt"))).to.equal(true);

    let from = log.mark();
    await worker.send({ inputId: "deny", content: "touch denied.txt" });
    const denyAsk = await log.next("interaction.requested", from);
    await worker.answer(denyAsk.id, { kind: "permission", allowed: false, reason: "Not in this folder." });
    expect(await log.next("tool.result", from)).to.deep.include({ isError: true, output: "Not in this folder." });
    expect(await log.next("turn.finished", from)).to.deep.include({ outcome: "completed" });
    expect(existsSync(join(rig.workdir, "denied.txt"))).to.equal(false);
    const afterDeny = rig.fake.messageRequests()[3]?.body.messages.at(-1).content;
    const denial = afterDeny.find((block: { type: string }) => block.type === "tool_result");
    expect(denial).to.deep.include({
      tool_use_id: denyAsk.payload.tool_use_id,
      content: "Not in this folder.",
      is_error: true,
    });

    from = log.mark();
    await worker.send({ inputId: "ask", content: "ask me" });
    const ask = await log.next("interaction.requested", from);
    expect(ask).to.deep.include({ kind: "question" });
    expect(ask.payload.questions).to.deep.equal(question.questions);
    await worker.answer(ask.id, { kind: "question", answers: { "Which color?": "Blue" } });
    const answered = await log.next("tool.result", from);
    expect(answered.isError).to.equal(false);
    expect(answered.output).to.contain('"Which color?"="Blue"');
    expect(await log.next("turn.finished", from)).to.deep.include({ outcome: "completed" });
    expect(rig.fake.pending()).to.equal(0);
  });

  it("interrupt stops a streaming turn and a turn waiting on permission; the same process takes the next turn", async () => {
    rig.fake.enqueue(
      // Streams two deltas, then holds until the CLI aborts the request.
      { blocks: [{ type: "text", text: "one two three four" }], chunkSize: 4, holdAfterDeltas: 2 },
      {
        blocks: [
          { type: "text", text: "Using Bash." },
          { type: "tool_use", name: "Bash", input: { command: "touch never.txt", description: "Create a file" } },
        ],
      },
      { blocks: [{ type: "text", text: "Still here." }] },
    );
    const { worker, log } = rig.start({ workerSessionId: randomUUID() });

    await worker.send({ inputId: "stream", content: "stream something" });
    await log.next("text.delta", 0, (e) => e.text === "two ");
    expect(await worker.interrupt()).to.equal(true);
    const stopped = await log.next("turn.finished");
    expect(stopped).to.deep.include({ outcome: "stopped", errorCode: "aborted_streaming" });
    expect(textOf(log.events())).to.deep.equal(["one two "]);

    let from = log.mark();
    await worker.send({ inputId: "tool", content: "touch never.txt" });
    const ask = await log.next("interaction.requested", from);
    expect(await worker.interrupt()).to.equal(true);
    expect(await log.next("interaction.withdrawn", from)).to.deep.equal({ type: "interaction.withdrawn", id: ask.id });
    expect(await log.next("turn.finished", from)).to.deep.include({ outcome: "stopped" });
    // A late answer to the withdrawn request writes nothing the CLI could misread.
    await worker.answer(ask.id, { kind: "permission", allowed: true });
    expect(existsSync(join(rig.workdir, "never.txt"))).to.equal(false);

    from = log.mark();
    await worker.send({ inputId: "next", content: "are you there?" });
    expect(await log.next("turn.finished", from)).to.deep.include({ outcome: "completed" });
    expect(textOf(log.events(from))).to.deep.equal(["Still here."]);
    expect(log.events().some((e) => e.type === "worker.exited")).to.equal(false);
  });

  it("upstream faults: a broken stream is retried unstreamed and its preview abandoned; a 500 ends the turn as api_error; exit 1 at EOF is no crash", async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "abcdefgh" }], chunkSize: 2, errorAfterDeltas: 2 });
    rig.fake.enqueueUnstreamed({ blocks: [{ type: "text", text: "Recovered." }] });
    const { worker, log } = rig.start({ workerSessionId: randomUUID() });
    await worker.send({ inputId: "broken", content: "stream and break" });
    expect(await log.next("turn.finished")).to.deep.include({ outcome: "completed" });
    const completed = log.events().filter((e) => e.type === "text.completed");
    expect(completed.map((e) => e.type === "text.completed" && [e.text, e.abandoned === true])).to.deep.equal([
      ["abcd", true],
      ["Recovered.", false],
    ]);
    expect(rig.fake.requests.filter((r) => r.path === "/v1/messages").map((r) => r.body.stream === true)).to.deep.equal(
      [true, false],
    );

    const from = log.mark();
    rig.fake.enqueue(
      { status: 500, error: { message: "injected failure" } },
      { status: 500, error: { message: "injected failure" } },
    );
    await worker.send({ inputId: "fail", content: "please fail" });
    const done = await log.next("turn.finished", from);
    expect(done).to.deep.include({ outcome: "api_error", errorCode: "api_error" });
    const events = log.events(from);
    const kinds = events
      .map((e) => e.type)
      .filter((t) => ["step", "turn.error", "turn.finished", "text.completed"].includes(t));
    expect(kinds).to.deep.equal(["step", "turn.error", "turn.finished"]);
    expect(events.find((e) => e.type === "step")).to.deep.include({ name: "api_retry" });
    expect(events.find((e) => e.type === "turn.error"))
      .to.have.property("message")
      .that.contains("500");
    expect(rig.fake.pending()).to.equal(0);

    await worker.close();
    expect(await log.next("worker.exited")).to.deep.equal({
      type: "worker.exited",
      code: 1,
      signal: null,
      crashed: false,
    });
  });

  it("a kill mid-turn is a crash; the next process resumes the session with its history", async () => {
    const sessionId = randomUUID();
    rig.fake.enqueue(
      { blocks: [{ type: "text", text: "Noted." }] },
      { blocks: [{ type: "text", text: "partial answer that never ends" }], chunkSize: 8, holdAfterDeltas: 1 },
    );
    const first = rig.start({ workerSessionId: sessionId });
    await first.worker.send({ inputId: "remember", content: "Remember the word pineapple" });
    // The CLI writes its transcript only once a turn has completed: a process killed in its first turn leaves
    // nothing to resume.
    await first.log.next("turn.finished");
    const from = first.log.mark();
    await first.worker.send({ inputId: "lost", content: "Now write an essay" });
    await first.log.next("text.delta", from);
    first.worker.kill();
    expect(await first.log.next("worker.exited")).to.deep.equal({
      type: "worker.exited",
      code: null,
      signal: "SIGKILL",
      crashed: true,
    });
    const late = await first.worker.send({ inputId: "late", content: "too late" }).then(
      () => "written",
      (err: Error) => err.message,
    );
    expect(late).to.match(/no longer accepts input/);

    rig.fake.enqueue({ blocks: [{ type: "text", text: "Resumed." }] });
    const second = rig.start({ workerSessionId: sessionId, resume: true });
    expect(second.worker.generation).to.equal(first.worker.generation + 1);
    await second.worker.send({ inputId: "again", content: "What was the word?" });
    expect(await second.log.next("turn.finished")).to.deep.include({ outcome: "completed" });
    expect(await second.log.next("worker.ready")).to.deep.include({ workerSessionId: sessionId });
    expect(second.log.events().some((e) => e.type === "step" && e.name === "resume_unavailable")).to.equal(false);
    const history = JSON.stringify(rig.fake.messageRequests()[2]?.body.messages);
    expect(history).to.contain("Remember the word pineapple");
    expect(history).to.contain("Noted.");
    expect(history).to.contain("What was the word?");
    expect(second.log.all.every((r) => r.generation === second.worker.generation)).to.equal(true);
  });
});
