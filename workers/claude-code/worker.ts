// One Claude Code CLI process as a neutral Worker: the WorkerProcess machine owns its lifecycle, the mapper turns
// stdout frames into WorkerEvents, one StdinWriter serialises everything written, and the ControlChannel matches our
// control requests (interrupt) with their responses. Every event goes out with this process's generation.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { type Actor, createActor } from "xstate";
import {
  type WorkerProcessEvent,
  type WorkerProcessExit,
  workerProcessMachine,
} from "../../machines/worker-process.js";
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
  private readonly actor: Actor<typeof workerProcessMachine>;
  private child: ChildProcessWithoutNullStreams | undefined;
  private writer: StdinWriter | undefined;
  private stderrLines = 0;
  private closed = false;
  /** Why the process never started (ENOENT, EACCES…): what a refused input reports, rather than the EPIPE it causes. */
  private spawnError: Error | undefined;
  private exitedAt: Promise<void>;
  private markExited!: () => void;

  constructor(
    readonly generation: number,
    private readonly plan: LaunchPlan,
    private readonly limits: WorkerLimits,
    private readonly listener: WorkerListener,
  ) {
    this.exitedAt = new Promise((resolve) => {
      this.markExited = resolve;
    });
    this.control = new ControlChannel(limits.maxUnmatchedResponses);
    this.mapper = new ClaudeCodeMapper({
      event: (event) => this.onWorkerEvent(event),
      reply: (frame) => void this.writer?.write(frame).catch(() => {}),
      controlResponse: (frame) => this.control.deliver(frame),
      abandon: () => this.actor.send({ type: "KILL" }),
    });
    this.actor = createActor(
      workerProcessMachine.provide({
        actions: {
          spawnProcess: () => this.spawnChild(),
          endInput: () => void this.writer?.end().catch(() => {}),
          killGroup: () => this.signalGroup("SIGKILL"),
          reportExit: (_, exit) => this.reportExit(exit),
        },
        delays: { drainGrace: limits.closeGraceMs },
      }),
      { input: { generation } },
    );
    this.actor.start();
  }

  async send(input: { inputId: string; content: string }): Promise<void> {
    const writer = this.liveWriter();
    const uuid = randomUUID();
    this.mapper.registerInput(input.inputId, uuid);
    // Tracked before the write settles: the CLI's lifecycle frames for it may be read before the write callback runs.
    const written = writer.write(stdinFrames.user(input.content, uuid));
    this.actor.send({ type: "INPUT_SENT", inputId: input.inputId });
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
    if (!writer || this.isFinished()) return false;
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
    this.actor.send({ type: "CLOSE" });
    return this.exitedAt;
  }

  kill(): void {
    this.actor.send({ type: "KILL" });
  }

  private isFinished(): boolean {
    return this.actor.getSnapshot().status === "done";
  }

  private liveWriter(): StdinWriter {
    const state = this.actor.getSnapshot();
    if (!this.writer || state.status === "done" || state.matches("draining")) {
      if (this.spawnError) throw this.cannotStart();
      throw new Error(`claude-code worker ${this.generation} no longer accepts input`);
    }
    return this.writer;
  }

  private spawnChild(): void {
    const child = spawn(this.plan.command, [...this.plan.args], {
      cwd: this.plan.cwd,
      env: { ...this.plan.env },
      detached: true, // its own process group, so kill() reaches the tools it started too
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
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
    child.on("spawn", () => this.actor.send({ type: "SPAWNED" }));
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
  }

  private cannotStart(): Error {
    return new Error(`cannot start the claude-code CLI: ${this.spawnError!.message}`);
  }

  private onClosed(code: number | null, signal: string | null): void {
    this.closed = true;
    this.control.close("the claude-code process has exited");
    this.actor.send({ type: "EXITED", code, signal });
  }

  private onStderrLine(line: string): void {
    this.stderrLines += 1;
    if (this.stderrLines <= this.limits.maxStderrLines) this.emit({ type: "step", name: "stderr", detail: { line } });
  }

  /** The whole group, even after the leader exited: a tool's child holding stdout open would delay `close`. */
  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined || this.closed) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: nobody is left in the group.
    }
  }

  private onWorkerEvent(event: WorkerEvent): void {
    const tracked = trackingEventOf(event);
    if (tracked) this.actor.send(tracked);
    this.emit(event);
  }

  private reportExit(exit: WorkerProcessExit): void {
    for (const id of this.mapper.interactions.withdrawAll()) this.emit({ type: "interaction.withdrawn", id });
    this.emit({ type: "worker.exited", code: exit.code, signal: exit.signal, crashed: exit.crashed });
    this.markExited();
  }

  private emit(event: WorkerEvent): void {
    this.listener(event, this.generation);
  }
}

/** The WorkerProcess bookkeeping a mapped event implies (the machine's notion of "busy"). */
export function trackingEventOf(event: WorkerEvent): WorkerProcessEvent | undefined {
  switch (event.type) {
    case "turn.started":
      return { type: "TURN_STARTED" };
    case "turn.finished":
      return { type: "TURN_FINISHED" };
    case "input.started":
      return { type: "INPUT_STARTED", inputId: event.inputId };
    case "input.completed":
      return { type: "INPUT_COMPLETED", inputId: event.inputId };
    default:
      return undefined;
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
