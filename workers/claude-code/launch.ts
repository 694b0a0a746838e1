// How one CLI process is launched (docs/protocol/claude-code.md): stream-json both ways, partial messages, the
// permission channel on stdio (never --dangerously-skip-permissions: refused as root, fixture h1, and it removes the
// channel), and
// --resume when the session's transcript exists, else --session-id (a fresh --session-id over an existing transcript
// dies with "already in use", fixture g1). The environment is built from an allow-list, not inherited wholesale.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { pinnedCommand } from "../pinned-command.js";

export interface LaunchPlan {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** True when the transcript was found and `--resume` is used. */
  readonly resumed: boolean;
}

export interface LaunchRequest {
  readonly command: string;
  readonly workdir: string;
  readonly home: string;
  readonly workerSessionId: string;
  readonly permissionMode: string;
  readonly extraArgs: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** Variables taken from the gateway's own environment; everything else must be given explicitly. */
const inheritedEnv = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SHELL", "USER", "LOGNAME", "TERM"];

const baseArgs = [
  "-p",
  "--input-format",
  "stream-json",
  "--output-format",
  "stream-json",
  "--verbose",
  "--include-partial-messages",
  "--permission-prompt-tool",
  "stdio",
];

export function planLaunch(request: LaunchRequest): LaunchPlan {
  const env: Record<string, string> = {};
  for (const name of inheritedEnv) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  // The CLI strips its credentials from Bash, hook and MCP subprocesses only when asked to (it then needs bubblewrap
  // and socat on Linux); only an explicit "0" in workers.claude-code.env turns that off.
  Object.assign(env, { CLAUDE_CODE_SUBPROCESS_ENV_SCRUB: "1" }, request.env, {
    HOME: request.home,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
  });
  const configDir = env.CLAUDE_CONFIG_DIR ?? join(request.home, ".claude");
  const resumed = transcriptExists(configDir, request.workerSessionId);
  const sessionArgs = resumed ? ["--resume", request.workerSessionId] : ["--session-id", request.workerSessionId];
  return {
    command: request.command,
    args: [...baseArgs, "--permission-mode", request.permissionMode, ...sessionArgs, ...request.extraArgs],
    cwd: request.workdir,
    env,
    resumed,
  };
}

/**
 * Whether a non-empty transcript `<id>.jsonl` exists in any project folder of the config dir (an empty session
 * folder is not resumable: docs/protocol/claude-code.md §2.3).
 */
export function transcriptExists(configDir: string, workerSessionId: string): boolean {
  const projects = join(configDir, "projects");
  if (!existsSync(projects)) return false;
  return readdirSync(projects).some((project) => {
    const file = join(projects, project, `${workerSessionId}.jsonl`);
    return existsSync(file) && statSync(file).size > 0;
  });
}

/** The CLI pinned in this repository's node_modules if present, else `claude` from PATH. */
export function defaultClaudeCommand(): string {
  return pinnedCommand("claude");
}
