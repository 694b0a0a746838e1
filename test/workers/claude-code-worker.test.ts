// The driver's process handling for faults the real CLI cannot be made to show: a missing command, garbage on
// stdout, an interrupt that is never acknowledged, a process that ignores EOF. A small stand-in executable plays the
// CLI here (it logs what it reads on stdin); everything else is the real driver.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClaudeCodeWorkerFactory } from "../../workers/claude-code/factory.js";
import type { Worker } from "../../workers/types.js";
import { waitUntil } from "../support/util.js";
import { EventLog } from "./cli-rig.js";

const standIn = `#!/usr/bin/env node
const fs = require("fs");
process.stdout.write("this is not json\\n");
process.stderr.write("stand-in warming up\\n");
process.stdout.write(JSON.stringify({ type: "system", subtype: "api_retry", attempt: 1 }) + "\\n");
if (process.env.STANDIN_HUGE_LINE) process.stdout.write(JSON.stringify({ type: "result", result: "x".repeat(5000) }) + "\\n");
let buf = "";
process.stdin.on("data", (d) => {
  buf += d;
  for (let i = buf.indexOf("\\n"); i >= 0; i = buf.indexOf("\\n")) {
    fs.appendFileSync(process.env.STANDIN_LOG, buf.slice(0, i) + "\\n");
    buf = buf.slice(i + 1);
  }
});
process.stdin.on("end", () => { if (!process.env.STANDIN_IGNORE_EOF) process.exit(1); });
setInterval(() => {}, 1000);
`;

describe("claude-code worker process handling", function () {
  this.timeout(20_000);
  let dir: string;
  let workers: Worker[];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "byok-standin-"));
    writeFileSync(join(dir, "claude"), standIn);
    chmodSync(join(dir, "claude"), 0o755);
    workers = [];
  });
  afterEach(async () => {
    for (const worker of workers) worker.kill();
    await Promise.all(workers.map((w) => w.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  function start(env: Record<string, string> = {}, command = join(dir, "claude"), maxLineChars?: number) {
    const log = new EventLog();
    const factory = createClaudeCodeWorkerFactory({
      command,
      ...(maxLineChars ? { maxLineChars } : {}),
      env: { STANDIN_LOG: join(dir, "stdin.log"), ...env },
      interruptAckMs: 200,
      closeGraceMs: 200,
    });
    const worker = factory.start({ workdir: dir, home: dir, workerSessionId: randomUUID(), resume: true }, (e, g) =>
      log.push(e, g),
    );
    workers.push(worker);
    return { worker, log };
  }

  it("a command that cannot be started is a crashed worker that refuses input", async () => {
    const { worker, log } = start({}, join(dir, "missing-claude"));
    expect(await log.next("worker.exited")).to.deep.include({ crashed: true });
    expect(await log.next("step", 0, (e) => e.name === "spawn_error"))
      .to.have.nested.property("detail.message")
      .that.contains("ENOENT");
    const refused = await worker.send({ inputId: "x", content: "hi" }).then(
      () => "written",
      (err: Error) => err.message,
    );
    expect(refused).to.match(/^cannot start the claude-code CLI: spawn .*missing-claude ENOENT/);
    expect(await worker.interrupt()).to.equal(false);
  });

  it("an input sent as the worker starts, to a command that cannot be started, is refused naming why", async () => {
    const { worker } = start({}, join(dir, "missing-claude"));
    const refused = await worker.send({ inputId: "x", content: "hi" }).then(
      () => "written",
      (err: Error) => err.message,
    );
    expect(refused).to.match(/^cannot start the claude-code CLI: spawn .*missing-claude ENOENT/);
  });

  it("reports garbage stdout lines and stderr as steps and keeps mapping; says when there was nothing to resume", async () => {
    const { log } = start();
    await log.next("step", 0, (e) => e.name === "api_retry");
    const steps = await Promise.all([
      log.next("step", 0, (e) => e.name === "bad_stdout_line"),
      log.next("step", 0, (e) => e.name === "stderr"),
      log.next("step", 0, (e) => e.name === "resume_unavailable"),
    ]);
    expect(steps[0].detail).to.deep.equal({ reason: "not_json", length: 16, preview: "this is not json" });
    expect(steps[1].detail).to.deep.equal({ line: "stand-in warming up" });
  });

  it("a line over the limit (the result may be in it) ends the turn WORKER_OUTPUT_LIMIT and gives the process up", async () => {
    const { log } = start({ STANDIN_HUGE_LINE: "1" }, join(dir, "claude"), 1000);
    const finished = await log.next("turn.finished");
    expect(finished).to.deep.include({ outcome: "failed", errorCode: "WORKER_OUTPUT_LIMIT" });
    expect(await log.next("worker.exited")).to.deep.include({ signal: "SIGKILL" });
  });

  it("an unacknowledged interrupt resolves false after its bound; the caller's kill is a crash", async () => {
    const { worker, log } = start();
    await worker.send({ inputId: "in-1", content: "hello" });
    expect(await worker.interrupt()).to.equal(false);
    // The stand-in logs what it reads once it runs, which on a loaded machine may be after the interrupt's bound.
    const logged = () => (existsSync(join(dir, "stdin.log")) ? readFileSync(join(dir, "stdin.log"), "utf8") : "");
    await waitUntil(() => logged().trim().split("\n").length >= 3, 10_000, logged);
    const lines = readFileSync(join(dir, "stdin.log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    // The initialize request goes first, as an SDK host's does (docs/protocol/claude-code.md §6).
    expect(lines.map((l) => l.type)).to.deep.equal(["control_request", "user", "control_request"]);
    expect(lines[0]).to.deep.equal({
      type: "control_request",
      request_id: "initialize_1",
      request: { subtype: "initialize" },
    });
    expect(lines[2]).to.deep.equal({
      type: "control_request",
      request_id: "interrupt_2",
      request: { subtype: "interrupt" },
    });
    worker.kill();
    expect(await log.next("worker.exited")).to.deep.equal({
      type: "worker.exited",
      code: null,
      signal: "SIGKILL",
      crashed: true,
    });
  });

  it("close is EOF: an idle process exiting 1 is no crash; one that ignores EOF is killed after the grace", async () => {
    const idle = start();
    await idle.worker.close();
    expect(await idle.log.next("worker.exited")).to.deep.equal({
      type: "worker.exited",
      code: 1,
      signal: null,
      crashed: false,
    });

    const stubborn = start({ STANDIN_IGNORE_EOF: "1" });
    await stubborn.worker.close();
    expect(await stubborn.log.next("worker.exited")).to.deep.include({ signal: "SIGKILL", crashed: true });
  });
});
