// The Claude Code WorkerFactory: defaults from the configuration (`workers.claude-code`), overridden per start by the
// session's WorkerStartOptions; each start is a new process with the next generation.
import type { Worker, WorkerFactory, WorkerListener, WorkerStartOptions } from "../types.js";
import { defaultClaudeCommand, planLaunch } from "./launch.js";
import { ClaudeCodeWorker, type WorkerLimits } from "./worker.js";

export interface ClaudeCodeFactoryOptions extends Partial<WorkerLimits> {
  /** The CLI to run; default: the pinned one in node_modules, else `claude` on PATH. */
  readonly command?: string;
  /** Appended after the driver's own flags. */
  readonly args?: readonly string[];
  /** Extra environment (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY…); values are never logged. */
  readonly env?: Readonly<Record<string, string>>;
  /** `--permission-mode`; default "default". */
  readonly permissionMode?: string;
  /** First generation handed out is `firstGeneration + 1`; default 0. */
  readonly firstGeneration?: number;
}

const defaultLimits: WorkerLimits = {
  interruptAckMs: 5_000,
  closeGraceMs: 30_000,
  // docs/protocol/aep.md §10: WORKER_OUTPUT_LIMIT is one line over 10 MB.
  maxLineChars: 10 * 1024 * 1024,
  maxUnmatchedResponses: 64,
  maxStderrLines: 50,
};

export function createClaudeCodeWorkerFactory(options: ClaudeCodeFactoryOptions = {}): WorkerFactory {
  let generation = options.firstGeneration ?? 0;
  const limits: WorkerLimits = {
    interruptAckMs: options.interruptAckMs ?? defaultLimits.interruptAckMs,
    closeGraceMs: options.closeGraceMs ?? defaultLimits.closeGraceMs,
    maxLineChars: options.maxLineChars ?? defaultLimits.maxLineChars,
    maxUnmatchedResponses: options.maxUnmatchedResponses ?? defaultLimits.maxUnmatchedResponses,
    maxStderrLines: options.maxStderrLines ?? defaultLimits.maxStderrLines,
  };
  return {
    start(start: WorkerStartOptions, listener: WorkerListener): Worker {
      generation += 1;
      const env = { ...options.env, ...start.env };
      const plan = planLaunch({
        command: start.command ?? options.command ?? defaultClaudeCommand(),
        workdir: start.workdir,
        // A HOME configured for the CLI (workers.claude-code.env.HOME) is explicit and wins; else the session's own.
        home: env.HOME ?? start.home ?? start.workdir,
        workerSessionId: start.workerSessionId,
        permissionMode: start.permissionMode ?? options.permissionMode ?? "default",
        extraArgs: [...(options.args ?? []), ...(start.args ?? [])],
        env,
      });
      const worker = new ClaudeCodeWorker(generation, plan, limits, listener);
      // Asked to resume but nothing to resume (transcript gone): the session continues without its history. Told
      // after start() has returned, like every other event.
      const started = generation;
      if (start.resume && !plan.resumed) {
        queueMicrotask(() =>
          listener(
            { type: "step", name: "resume_unavailable", detail: { workerSessionId: start.workerSessionId } },
            started,
          ),
        );
      }
      return worker;
    },
  };
}
