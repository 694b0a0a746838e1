// One Claude Code CLI process as a neutral Worker: the WorkerProcess machine owns its lifecycle, the mapper turns
// stdout frames into WorkerEvents, one StdinWriter serialises everything written, and the ControlChannel matches our
// control requests (interrupt) with their responses. Every event goes out with this process's generation.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { WorkerProcessExit } from "../../machines/worker-process.js";
import { WorkerProcessHost } from "../process/host.js";
import type { InteractionAnswer, Worker, WorkerEvent, WorkerListener } from "../types.js";
import { commandEvents, WORKER_COMMANDS } from "./commands.js";
import { ControlChannel } from "./control-channel.js";
import { asStdoutFrame, stdinFrames } from "./frames.js";
import type { LaunchPlan } from "./launch.js";
import { ClaudeCodeMapper } from "./mapper.js";
import { NdjsonSplitter } from "./ndjson.js";
import { StdinWriter } from "./stdin-writer.js";

export interface WorkerLimits {
  /** How long interrupt() waits for the CLI's control_response. */
  readonly interruptAckMs: number;
  /** How long close() lets a running turn finish before the process group is killed. */
  readonly closeGraceMs: number;
  readonly maxLineChars: number;
  readonly maxUnmatchedResponses: number;
  /** stderr lines reported as `step` events; later ones are dropped. */
  readonly maxStderrLines: number;
}

export class ClaudeCodeWorker implements Worker {
  private readonly mapper: ClaudeCodeMapper;
  private readonly control: ControlChannel;
  private readonly process: WorkerProcessHost;
  private writer: StdinWriter | undefined;
  private stderrLines = 0;
  /** Why the process never started (ENOENT, EACCES…): what a refused input reports, rather than the EPIPE it causes. */
  private spawnError: Error | undefined;

  constructor(
    readonly generation: number,
    private readonly plan: LaunchPlan,
    private readonly limits: WorkerLimits,
    private readonly listener: WorkerListener,
  ) {
    this.control = new ControlChannel(limits.maxUnmatchedResponses);
    this.mapper = new ClaudeCodeMapper({
      event: (event) => this.onWorkerEvent(event),
      reply: (frame) => void this.writer?.write(frame).catch(() => {}),
      controlResponse: (frame) => this.control.deliver(frame),
      abandon: () => this.process.kill(),
    });
    this.process = new WorkerProcessHost(generation, limits.closeGraceMs, {
      spawn: () => this.spawnChild(),
      endInput: () => void this.writer?.end().catch(() => {}),
      reportExit: (exit) => this.reportExit(exit),
    });
    this.process.start();
  }

  async send(input: { inputId: string; content: string }): Promise<void> {
    const writer = this.liveWriter();
    const uuid = randomUUID();
    this.mapper.registerInput(input.inputId, uuid);
    // Tracked before the write settles: the CLI's lifecycle frames for it may be read before the write callback runs.
    const written = writer.write(stdinFrames.user(input.content, uuid));
    this.process.send({ type: "INPUT_SENT", inputId: input.inputId });
    await written.catch((err: unknown) => {
      throw this.spawnError ? this.cannotStart() : err;
    });
  }

  /** An answer for an id that is no longer open (withdrawn, already answered) is dropped: the CLI stopped waiting. */
  async answer(interactionId: string, answer: InteractionAnswer): Promise<void> {
    const frame = this.mapper.interactions.answer(interactionId, answer);
    if (frame) await this.liveWriter().write(frame);
  }

  async interrupt(): Promise<boolean> {
    const writer = this.writer;
    if (!writer || this.process.finished) return false;
    const requestId = this.control.newRequestId("interrupt");
    const result = await this.control.request(requestId, this.limits.interruptAckMs, () =>
      writer.write(stdinFrames.controlRequest(requestId, "interrupt")),
    );
    return result.ok;
  }

  async command(command: string): Promise<WorkerEvent[] | undefined> {
    const subtype = WORKER_COMMANDS.get(command);
    if (subtype === undefined) return undefined;
    const writer = this.liveWriter();
    const requestId = this.control.newRequestId("command");
    const result = await this.control.request(requestId, this.limits.interruptAckMs * 2, () =>
      writer.write(stdinFrames.controlRequest(requestId, subtype)),
    );
    if (!result.ok) throw new Error(`the worker did not answer ${command}: ${result.error}`);
    return commandEvents(command, result.response);
  }

  close(): Promise<void> {
    return this.process.close();
  }

  kill(): void {
    this.process.kill();
  }

  private liveWriter(): StdinWriter {
    if (!this.writer || this.process.closing) {
      if (this.spawnError) throw this.cannotStart();
      throw new Error(`claude-code worker ${this.generation} no longer accepts input`);
    }
    return this.writer;
  }

  private spawnChild(): ChildProcessWithoutNullStreams {
    const child = spawn(this.plan.command, [...this.plan.args], {
      cwd: this.plan.cwd,
      env: { ...this.plan.env },
      detached: true, // its own process group, so kill() reaches the tools it started too
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.writer = new StdinWriter(child.stdin);
    const stdout = new NdjsonSplitter(this.limits.maxLineChars, (item) => {
      if (item.kind === "bad") {
        this.emit({
          type: "step",
          name: "bad_stdout_line",
          detail: { reason: item.reason, length: item.length, preview: item.preview },
        });
        // The lost line may be the turn's result: waiting for it would hang the turn.
        if (item.reason === "too_long")
          this.mapper.failTurn(
            "WORKER_OUTPUT_LIMIT",
            `a worker output line of ${item.length} characters is over the ${this.limits.maxLineChars} limit`,
          );
        return;
      }
      const frame = asStdoutFrame(item.value);
      if (frame) this.mapper.handle(frame);
      else this.emit({ type: "raw", frame: item.value });
    });
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stdout.on("end", () => stdout.end());
    const stderr = new TextLines((line) => this.onStderrLine(line));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.stderr.on("end", () => stderr.end());
    child.on("spawn", () => this.process.send({ type: "SPAWNED" }));
    // The SDK host's first word (docs/protocol/claude-code.md §6): the CLI then knows a host drives it. Its answer
    // (commands, models, account) is not needed here; a CLI that refuses it still takes inputs.
    const initialize = this.control.newRequestId("initialize");
    void this.control.request(initialize, this.limits.closeGraceMs, () =>
      this.writer!.write(stdinFrames.controlRequest(initialize, "initialize")),
    );
    child.on("error", (err) => {
      if (child.pid === undefined) this.spawnError = err;
      this.emit({ type: "step", name: "spawn_error", detail: { message: err.message } });
      // A process that never started has no `close` of its own to wait for.
      if (child.pid === undefined) this.onClosed(null, null);
    });
    // `close`, not `exit`: stdout is fully read by then, so the last result is mapped before the exit is judged.
    child.on("close", (code, signal) => this.onClosed(code, signal));
    return child;
  }

  private cannotStart(): Error {
    return new Error(`cannot start the claude-code CLI: ${this.spawnError!.message}`);
  }

  private onClosed(code: number | null, signal: string | null): void {
    if (this.process.processGone(code, signal)) this.control.close("the claude-code process has exited");
  }

  private onStderrLine(line: string): void {
    this.stderrLines += 1;
    if (this.stderrLines <= this.limits.maxStderrLines) this.emit({ type: "step", name: "stderr", detail: { line } });
  }

  private onWorkerEvent(event: WorkerEvent): void {
    this.process.track(event);
    this.emit(event);
  }

  private reportExit(exit: WorkerProcessExit): void {
    for (const id of this.mapper.interactions.withdrawAll()) this.emit({ type: "interaction.withdrawn", id });
    this.emit({ type: "worker.exited", code: exit.code, signal: exit.signal, crashed: exit.crashed });
  }

  private emit(event: WorkerEvent): void {
    this.listener(event, this.generation);
  }
}

/** stderr is plain text: split into lines, each cut to a bound. */
class TextLines {
  private pending = "";
  constructor(private readonly onLine: (line: string) => void) {}
  push(chunk: Buffer): void {
    const lines = (this.pending + chunk.toString("utf8")).split("\n");
    this.pending = (lines.pop() ?? "").slice(0, maxStderrLineChars);
    for (const line of lines) this.line(line);
  }
  end(): void {
    this.line(this.pending);
    this.pending = "";
  }
  private line(line: string): void {
    if (line.trim() !== "") this.onLine(line.slice(0, maxStderrLineChars));
  }
}

const maxStderrLineChars = 4096;
