// The driver's I/O parts without a process: stdout line splitting, stdin line encoding and its single writer, the
// control channel, and the launch plan.
import { expect } from "chai";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { ControlChannel } from "../../workers/claude-code/control-channel.js";
import { type StdinFrame, encodeStdinLine, stdinFrames } from "../../workers/claude-code/frames.js";
import { planLaunch } from "../../workers/claude-code/launch.js";
import { type NdjsonItem, NdjsonSplitter } from "../../workers/claude-code/ndjson.js";
import { StdinWriter } from "../../workers/claude-code/stdin-writer.js";

const uuid = "6aed0b33-6725-44a1-9c10-2b3ef72f40c3";

describe("claude-code stdout splitter", () => {
  const split = (max: number, ...chunks: Array<string | Buffer>) => {
    const items: NdjsonItem[] = [];
    const splitter = new NdjsonSplitter(max, (item) => void items.push(item));
    for (const chunk of chunks) splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    splitter.end();
    return items;
  };

  it("joins lines cut across chunks, including inside a multi-byte character, and keeps a last line without newline", () => {
    const bytes = Buffer.from('{"t":"h\u00e9"}\n{"n":2}');
    const cut = bytes.indexOf(0xc3) + 1; // between the two bytes of "é"
    expect(split(100, bytes.subarray(0, cut), bytes.subarray(cut))).to.deep.equal([
      { kind: "value", value: { t: "h\u00e9" } },
      { kind: "value", value: { n: 2 } },
    ]);
  });

  it("reports a non-JSON line and goes on", () => {
    expect(split(100, "not json\n\n{}\n")).to.deep.equal([
      { kind: "bad", reason: "not_json", length: 8, preview: "not json" },
      { kind: "value", value: {} },
    ]);
  });

  it("skips a line over the bound to its newline, whether it arrives whole or in pieces", () => {
    const long = `{"x":"${"a".repeat(30)}"}`;
    const whole = split(20, `${long}\n{}\n`);
    const pieces = split(20, long.slice(0, 10), long.slice(10, 25), `${long.slice(25)}\n{}\n`);
    for (const items of [whole, pieces]) {
      expect(items).to.have.length(2);
      expect(items[0]).to.deep.include({ kind: "bad", reason: "too_long", length: long.length });
      expect(items[1]).to.deep.equal({ kind: "value", value: {} });
    }
  });
});

describe("claude-code stdin lines", () => {
  it("are one JSON object each, with U+2028/U+2029 escaped", () => {
    const line = encodeStdinLine(stdinFrames.user("a\nb\u2028c\u2029d", uuid));
    expect(line.endsWith("\n")).to.equal(true);
    expect(line.slice(0, -1)).to.not.match(/[\n\r\u2028\u2029]/);
    expect(JSON.parse(line)).to.deep.equal({
      type: "user",
      message: { role: "user", content: "a\nb\u2028c\u2029d" },
      parent_tool_use_id: null,
      session_id: "",
      uuid,
    });
  });

  it("refuse frames the CLI would not accept", () => {
    expect(() => encodeStdinLine(stdinFrames.user("hi", "not-a-uuid"))).to.throw();
    expect(() =>
      encodeStdinLine({
        type: "control_response",
        response: { subtype: "success", request_id: "" },
      } as unknown as StdinFrame),
    ).to.throw();
    expect(() =>
      encodeStdinLine({ type: "user", message: { role: "user", content: "x" }, extra: 1 } as unknown as StdinFrame),
    ).to.throw();
  });

  it("are written in call order by the single writer, and EOF comes after the queued writes", async () => {
    const stream = new PassThrough();
    const written: string[] = [];
    stream.on("data", (chunk: Buffer) => written.push(chunk.toString()));
    const writer = new StdinWriter(stream);
    const frames = [
      stdinFrames.user("one", uuid),
      stdinFrames.controlRequest("interrupt_1", "interrupt"),
      stdinFrames.error("h-1", "no"),
    ];
    const writes = frames.map((f) => writer.write(f));
    await writer.end();
    await Promise.all(writes);
    expect(written.join("")).to.equal(frames.map(encodeStdinLine).join(""));
    expect(stream.writableEnded).to.equal(true);
    let refused = "";
    await writer.write(frames[0]!).catch((err: Error) => (refused = err.message));
    expect(refused).to.equal("stdin is closed");
  });

  it("reject a write once the stream broke, without an unhandled error", async () => {
    const stream = new Writable({ write: (_chunk, _enc, done) => done(new Error("EPIPE")) });
    const writer = new StdinWriter(stream);
    const first = await writer.write(stdinFrames.user("one", uuid)).then(
      () => "ok",
      (err: Error) => err.message,
    );
    const second = await writer.write(stdinFrames.user("two", uuid)).then(
      () => "ok",
      (err: Error) => err.message,
    );
    expect([first, second]).to.deep.equal(["EPIPE", "EPIPE"]);
  });
});

describe("claude-code control channel", () => {
  const success = (requestId: string, response: unknown = {}) => ({
    type: "control_response",
    response: { subtype: "success" as const, request_id: requestId, response },
  });

  it("matches a response by request_id, registered before the write", async () => {
    const channel = new ControlChannel(4);
    const result = channel.request("interrupt_1", 60_000, async () =>
      channel.deliver(success("interrupt_1", { still_queued: [] })),
    );
    expect(await result).to.deep.equal({ ok: true, response: { still_queued: [] } });
  });

  it("an error response, a timeout, or a failed write resolve false", async () => {
    const channel = new ControlChannel(4);
    const error = channel.request("a", 60_000, async () =>
      channel.deliver({
        type: "control_response",
        response: { subtype: "error", request_id: "a", error: "Unsupported" },
      }),
    );
    expect(await error).to.deep.equal({ ok: false, error: "Unsupported" });
    expect(await channel.request("b", 1, async () => {})).to.have.property("ok", false);
    expect(await channel.request("c", 60_000, () => Promise.reject(new Error("EPIPE")))).to.have.property("ok", false);
  });

  it("keeps unmatched responses in a bounded buffer, oldest out first; a late waiter takes its own", async () => {
    const channel = new ControlChannel(2);
    channel.deliver(success("x"));
    channel.deliver(success("y"));
    channel.deliver(success("z"));
    expect(channel.unmatchedCount()).to.equal(2);
    expect(await channel.request("z", 60_000, async () => {})).to.deep.equal({ ok: true, response: {} });
    expect(await channel.request("x", 1, async () => {})).to.have.property("ok", false);
  });

  it("fails pending requests when the transport closes, and later ones at once", async () => {
    const channel = new ControlChannel(4);
    const pending = channel.request("interrupt_1", 60_000, async () => {});
    channel.close("process exited");
    expect(await pending).to.deep.equal({ ok: false, error: "process exited" });
    expect(await channel.request("interrupt_2", 60_000, async () => {})).to.deep.equal({
      ok: false,
      error: "process exited",
    });
  });
});

describe("claude-code launch plan", () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), "byok-launch-"));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  const plan = (env: Record<string, string> = {}) =>
    planLaunch({
      command: "claude",
      workdir: "/w",
      home,
      workerSessionId: uuid,
      permissionMode: "acceptEdits",
      extraArgs: ["--model", "m"],
      env,
    });

  it("runs stream-json both ways with partial messages and the stdio permission channel, never skipping permissions", () => {
    const { args, cwd } = plan();
    expect(args).to.deep.equal([
      "-p",
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json",
      "--verbose",
      "--include-partial-messages",
      "--permission-prompt-tool",
      "stdio",
      "--permission-mode",
      "acceptEdits",
      "--session-id",
      uuid,
      "--model",
      "m",
    ]);
    expect(args).to.not.include("--dangerously-skip-permissions");
    expect(cwd).to.equal("/w");
  });

  it("resumes when a non-empty transcript exists, starts fresh when it is missing or empty", () => {
    const project = join(home, ".claude", "projects", "-w");
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, `${uuid}.jsonl`), "");
    expect(plan().args).to.include("--session-id");
    writeFileSync(join(project, `${uuid}.jsonl`), '{"type":"user"}\n');
    expect(plan()).to.deep.include({ resumed: true });
    expect(plan().args.slice(-4)).to.deep.equal(["--resume", uuid, "--model", "m"]);
  });

  it("builds the environment from an allow-list plus the given variables, with HOME, quiet-traffic and subprocess-scrub flags set", () => {
    process.env.BYOK_TEST_SECRET = "must-not-leak";
    try {
      const { env } = plan({ ANTHROPIC_BASE_URL: "http://127.0.0.1:1", HOME: "/elsewhere" });
      expect(env).to.not.have.property("BYOK_TEST_SECRET");
      expect(env).to.include({
        ANTHROPIC_BASE_URL: "http://127.0.0.1:1",
        HOME: home,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        CLAUDE_CODE_SUBPROCESS_ENV_SCRUB: "1",
      });
      expect(env.PATH).to.equal(process.env.PATH);
    } finally {
      delete process.env.BYOK_TEST_SECRET;
    }
  });
});
