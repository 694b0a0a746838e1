// The ACP WorkerFactory, for any agent that speaks the Agent Client Protocol over stdio: the generic `acp` kind runs
// the configured command; `codex` is the same driver with the pinned @zed-industries/codex-acp as its default.
// Each start is a new process with the next generation. ACP agents name their own sessions, so the factory
// remembers which agent session each worker session had (bounded, in memory) to resume it on the next start.
import { pinnedCommand } from "../pinned-command.js";
import type { Worker, WorkerFactory, WorkerListener, WorkerStartOptions } from "../types.js";
import { type AcpLimits, AcpWorker } from "./worker.js";

export interface AcpFactoryOptions extends Partial<AcpLimits> {
  /** The agent to run; `acp` needs one, `codex` defaults to the pinned codex-acp. */
  readonly command?: string;
  readonly args?: readonly string[];
  /** Extra environment (API keys, provider settings); values are never logged. */
  readonly env?: Readonly<Record<string, string>>;
  /** `session/set_mode` once the session is open (Codex: read-only, auto, full-access). */
  readonly mode?: string;
  /** First generation handed out is `firstGeneration + 1`; default 0. */
  readonly firstGeneration?: number;
}

const defaultLimits: AcpLimits = {
  startTimeoutMs: 60_000,
  interruptAckMs: 5_000,
  closeGraceMs: 30_000,
  maxMessageBytes: 10 * 1024 * 1024, // AEP's output line limit
  maxStderrLines: 50,
  maxOpenPermissions: 64,
  maxBlockChars: 4 * 1024 * 1024,
  maxToolOutputChars: 1024 * 1024,
  maxToolsPerTurn: 10_000,
};

/** Worker sessions whose agent session id is remembered; the oldest is forgotten first. */
const MAX_REMEMBERED_SESSIONS = 4096;

/** Variables taken from the gateway's own environment; everything else must be given explicitly. */
const inheritedEnv = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SHELL", "USER", "LOGNAME", "TERM"];

export function createAcpWorkerFactory(kind: "codex" | "acp", options: AcpFactoryOptions = {}): WorkerFactory {
  let generation = options.firstGeneration ?? 0;
  const limits: AcpLimits = { ...defaultLimits, ...definedOnly(options) };
  const agentSessions = new Map<string, string>();
  const remember = (workerSessionId: string, agentSession: string) => {
    agentSessions.delete(workerSessionId);
    agentSessions.set(workerSessionId, agentSession);
    if (agentSessions.size > MAX_REMEMBERED_SESSIONS) agentSessions.delete(agentSessions.keys().next().value!);
  };
  return {
    start(start: WorkerStartOptions, listener: WorkerListener): Worker {
      generation += 1;
      const command = start.command ?? options.command ?? (kind === "codex" ? defaultCodexCommand() : undefined);
      return new AcpWorker(
        generation,
        {
          kind,
          command,
          args: [...(options.args ?? []), ...(start.args ?? [])],
          cwd: start.workdir,
          env: agentEnv(start, options.env),
          previousSession: start.resume ? agentSessions.get(start.workerSessionId) : undefined,
          mode: options.mode,
          onSession: (agentSession) => remember(start.workerSessionId, agentSession),
        },
        limits,
        listener,
      );
    },
  };
}

/** An allow-list of the gateway's environment, then the configured one, with HOME the session's. */
function agentEnv(
  start: WorkerStartOptions,
  configured: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of inheritedEnv) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, configured, start.env);
  env.HOME = start.home ?? env.HOME ?? start.workdir;
  return env;
}

/** The codex-acp pinned in this repository's node_modules if present, else `codex-acp` from PATH. */
export function defaultCodexCommand(): string {
  return pinnedCommand("codex-acp");
}

function definedOnly(options: AcpFactoryOptions): Partial<AcpLimits> {
  const limits: Partial<Record<keyof AcpLimits, number>> = {};
  for (const key of Object.keys(defaultLimits) as Array<keyof AcpLimits>) {
    const value = options[key];
    if (typeof value === "number") limits[key] = value;
  }
  return limits;
}
