// One ACP agent process as a neutral Worker: the WorkerProcess machine owns its lifecycle (spawn, busy, drain,
// exit judgement), the SDK's client side speaks JSON-RPC over its stdio, one AcpTurnMapper per prompt turns
// session/update into WorkerEvents, AcpPermissions carries permission requests. Every event goes out with this
// process's generation.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import type * as acp from "@agentclientprotocol/sdk";
import type { WorkerProcessExit } from "../../machines/worker-process.js";
import { WorkerProcessHost } from "../process/host.js";
import type { InteractionAnswer, TurnOutcome, Worker, WorkerEvent, WorkerListener } from "../types.js";
import type { Handshake } from "./handshake.js";
import { AcpTurnMapper, type MapperLimits } from "./mapper.js";
import { AcpPermissions } from "./permissions.js";

export interface AcpLimits extends MapperLimits {
  /** initialize + session/new (or resume) must answer within this, or the start failed. */
  readonly startTimeoutMs: number;
  /** How long interrupt() waits for the prompt to end `cancelled` after session/cancel. */
  readonly interruptAckMs: number;
  /** How long close() lets a running turn finish before the process group is killed. */
  readonly closeGraceMs: number;
  /** One JSON-RPC line from the agent (the SDK closes the connection beyond it). */
  readonly maxMessageBytes: number;
  readonly maxStderrLines: number;
  readonly maxOpenPermissions: number;
}

export interface AcpLaunch {
  readonly kind: string;
  /** Undefined when none is configured: the start fails like a command that does not exist. */
  readonly command: string | undefined;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly previousSession: string | undefined;
  readonly mode: string | undefined;
  /** The agent session id, once open (the factory remembers it for the next start's resume). */
  readonly onSession: (sessionId: string) => void;
}

/** An ACP stop reason → how the AEP turn ends. */
const OUTCOMES = new Map<acp.StopReason, TurnOutcome>([
  ["end_turn", "completed"],
  ["cancelled", "stopped"],
  ["max_tokens", "limit"],
  ["max_turn_requests", "limit"],
  ["refusal", "failed"],
]);

/** The SDK is loaded with the first ACP worker, so a gateway that runs none never pays for it. */
type Sdk = typeof acp;

interface OpenSession extends Handshake {
  readonly connection: acp.ClientConnection;
}

interface Turn {
  readonly inputId: string;
  readonly mapper: AcpTurnMapper;
  readonly ended: Promise<void>;
}

export class AcpWorker implements Worker {
  private readonly process: WorkerProcessHost;
  private readonly permissions: AcpPermissions;
  private child: ChildProcessWithoutNullStreams | undefined;
  private connection: acp.ClientConnection | undefined;
  private session: Promise<OpenSession> | undefined;
  private turn: Turn | undefined;
  private stderrLines = 0;
  /** Why the process never started (ENOENT, EACCES…): what a refused input reports. */
  private spawnError: Error | undefined;

  constructor(
    readonly generation: number,
    private readonly launch: AcpLaunch,
    private readonly limits: AcpLimits,
    private readonly listener: WorkerListener,
  ) {
    this.permissions = new AcpPermissions(generation, limits.maxOpenPermissions, (e) => this.emit(e));
    this.process = new WorkerProcessHost(generation, limits.closeGraceMs, {
      spawn: () => this.spawnChild(),
      endInput: () => this.child?.stdin.end(),
      reportExit: (exit) => this.reportExit(exit),
    });
    this.process.start();
  }

  /** Resolves once the prompt is sent (the agent session is open); the turn's end arrives as turn.finished. */
  async send(input: { inputId: string; content: string }): Promise<void> {
    if (this.spawnError) throw this.cannotStart(this.spawnError);
    if (!this.session || this.process.closing)
      throw new Error(`${this.launch.kind} worker ${this.generation} no longer accepts input`);
    if (this.turn) throw new Error(`${this.launch.kind} worker ${this.generation} is already running a turn`);
    const { sessionId, connection } = await this.session.catch((err: unknown) => {
      throw this.spawnError ? this.cannotStart(this.spawnError) : err;
    });
    this.process.send({ type: "INPUT_SENT", inputId: input.inputId });
    const mapper = new AcpTurnMapper(input.inputId, this.limits);
    const prompt = connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: input.content }],
    });
    this.turn = { inputId: input.inputId, mapper, ended: prompt.then(noop, noop) };
    this.emit({ type: "turn.started", inputId: input.inputId });
    this.emit({ type: "input.started", inputId: input.inputId, mode: "turn" });
    prompt.then(
      (response) => this.endTurn(response.stopReason),
      (err: unknown) => this.failTurn(err),
    );
  }

  async answer(interactionId: string, answer: InteractionAnswer): Promise<void> {
    this.permissions.answer(interactionId, answer);
  }

  /** session/cancel; acknowledged when the prompt ends (ACP: with stopReason cancelled) within the bound. */
  async interrupt(): Promise<boolean> {
    const turn = this.turn;
    if (!turn || !this.session || this.process.finished) return false;
    const { sessionId, connection } = await this.session;
    for (const id of this.permissions.cancelAll()) this.emit({ type: "interaction.withdrawn", id });
    await connection.agent.notify("session/cancel", { sessionId }).catch(noop);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.limits.interruptAckMs);
    });
    const acked = await Promise.race([turn.ended.then(() => true), timeout]);
    clearTimeout(timer);
    return acked;
  }

  close(): Promise<void> {
    return this.process.close();
  }

  kill(): void {
    this.process.kill();
  }

  private spawnChild(): ChildProcessWithoutNullStreams | undefined {
    const { command, args, cwd, env } = this.launch;
    if (command === undefined) {
      this.spawnError = new Error(`no command is configured (workers.${this.launch.kind}.command)`);
      queueMicrotask(() => this.onClosed(null, null));
      return undefined;
    }
    const child = spawn(command, [...args], {
      cwd,
      env: { ...env },
      detached: true, // its own process group, so kill() reaches the tools it started too
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    child.stdin.on("error", noop); // EPIPE after the agent died: its exit is what counts
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => this.onStderr(chunk));
    child.on("spawn", () => this.process.send({ type: "SPAWNED" }));
    child.on("error", (err) => {
      this.emit({ type: "step", name: "spawn_error", detail: { message: err.message } });
      if (child.pid !== undefined) return;
      this.spawnError = err;
      this.onClosed(null, null);
    });
    child.on("close", (code, signal) => this.onClosed(code, signal));
    // The handshake starts at once (buffered until the process runs), so an input never waits for `spawn`.
    this.session = this.openSession(child);
    // A start that fails is reported by the input that waits for it (send rejects: WORKER_START_FAILED).
    this.session.catch(noop);
    return child;
  }

  private connect(sdk: Sdk, child: ChildProcessWithoutNullStreams): acp.ClientConnection {
    const stream = sdk.ndJsonStream(
      Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
      { maxMessageBytes: this.limits.maxMessageBytes },
    );
    const app = sdk
      .client({ name: "byok-gateway" })
      .onNotification("session/update", ({ params }) => this.onUpdate(params.update))
      .onRequest("session/request_permission", ({ params }) => {
        // The request carries the call as a tool_call_update (ACP): shown first, so the prompt has its tool.
        this.onUpdate({ sessionUpdate: "tool_call_update", ...params.toolCall });
        return this.permissions.request(params);
      });
    const connection = app.connect(stream);
    this.connection = connection;
    void connection.closed.then(() => this.onConnectionClosed(connection));
    return connection;
  }

  private async openSession(child: ChildProcessWithoutNullStreams): Promise<OpenSession> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`the ${this.launch.kind} agent did not open a session within ${this.limits.startTimeoutMs} ms`),
          ),
        this.limits.startTimeoutMs,
      );
    });
    try {
      const [sdk, { handshake }] = await Promise.race([
        Promise.all([import("@agentclientprotocol/sdk"), import("./handshake.js")]),
        timeout,
      ]);
      const connection = this.connect(sdk, child);
      const opened = await Promise.race([
        handshake(connection.agent, {
          workdir: this.launch.cwd,
          previous: this.launch.previousSession,
          mode: this.launch.mode,
          env: this.launch.env,
        }),
        timeout,
      ]);
      this.launch.onSession(opened.sessionId);
      if (opened.resumeUnavailable)
        this.emit({ type: "step", name: "resume_unavailable", detail: { session: this.launch.previousSession } });
      this.emit({
        type: "worker.ready",
        workerSessionId: opened.sessionId,
        ...(opened.agentVersion ? { version: opened.agentVersion } : {}),
        ...(opened.modeId ? { permissionMode: opened.modeId } : {}),
      });
      return { ...opened, connection };
    } catch (err) {
      this.emit({ type: "step", name: "start_failed", detail: { message: (err as Error).message } });
      this.kill();
      throw this.cannotStart(err as Error);
    } finally {
      clearTimeout(timer);
    }
  }

  private cannotStart(err: Error): Error {
    return new Error(`cannot start the ${this.launch.kind} agent: ${err.message}`);
  }

  private onUpdate(update: acp.SessionUpdate): void {
    // Outside a prompt (a session/load replay, a late update) nothing is turn content.
    if (!this.turn) return;
    for (const event of this.turn.mapper.map(update)) this.emit(event);
  }

  private endTurn(stopReason: acp.StopReason): void {
    const turn = this.turn;
    if (!turn) return;
    for (const event of turn.mapper.finish()) this.emit(event);
    const outcome = OUTCOMES.get(stopReason) ?? "failed";
    this.turn = undefined;
    this.emit({
      type: "turn.finished",
      outcome,
      ...(outcome === "completed" || outcome === "stopped" ? {} : { message: `the agent stopped: ${stopReason}` }),
    });
    this.emit({ type: "input.completed", inputId: turn.inputId });
  }

  /** The prompt failed: an agent error ends the turn; a closed connection is the process's end, judged on exit. */
  private failTurn(err: unknown): void {
    const turn = this.turn;
    if (!turn || this.connection?.signal.aborted) return;
    for (const event of turn.mapper.finish()) this.emit(event);
    this.turn = undefined;
    const message = err instanceof Error ? err.message : String(err);
    this.emit({ type: "turn.finished", outcome: "failed", message: `the agent failed the prompt: ${message}` });
    this.emit({ type: "input.completed", inputId: turn.inputId });
  }

  /**
   * The JSON-RPC connection is gone (stdout closed, a line over maxMessageBytes, unparsable output) while the
   * process may live on: it can no longer answer, so it is killed and its exit ends the turn.
   */
  private onConnectionClosed(connection: acp.ClientConnection): void {
    if (this.process.closing) return;
    const reason = connection.signal.reason;
    const message = reason instanceof Error ? reason.message : "the agent's output ended";
    this.emit({ type: "step", name: "connection_closed", detail: { message } });
    this.kill();
  }

  private onStderr(chunk: string): void {
    for (const line of chunk.split("\n")) {
      if (line.trim() === "" || this.stderrLines >= this.limits.maxStderrLines) continue;
      this.stderrLines += 1;
      this.emit({ type: "step", name: "stderr", detail: { line: line.slice(0, 4096) } });
    }
  }

  private onClosed(code: number | null, signal: string | null): void {
    if (this.process.processGone(code, signal))
      this.connection?.close(new Error(`the ${this.launch.kind} agent has exited`));
  }

  private emit(event: WorkerEvent): void {
    this.process.track(event);
    this.listener(event, this.generation);
  }

  private reportExit(exit: WorkerProcessExit): void {
    for (const id of this.permissions.cancelAll()) this.emit({ type: "interaction.withdrawn", id });
    this.emit({ type: "worker.exited", code: exit.code, signal: exit.signal, crashed: exit.crashed });
  }
}

const noop = (): void => {};
