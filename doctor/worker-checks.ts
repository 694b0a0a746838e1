// The AEP worker: the Claude Code CLI exists, reports its version, can start its sandbox, and will have credentials.
// The worker starts with an allow-listed environment and its own HOME, so only what the config hands it counts.
import { execFile } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { ClaudeCodeWorkerConfig } from "../engine/config.js";
import { defaultClaudeCommand } from "../workers/claude-code/launch.js";
import { type Check, fail, PROBE_TIMEOUT_MS, pass, reasonOf, skip } from "./check.js";

/** The variables the CLI takes a credential from. */
const CREDENTIAL_VARIABLES = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];

export async function checkWorkerCommand(worker: ClaudeCodeWorkerConfig | undefined): Promise<Check> {
  const command = worker?.command ?? defaultClaudeCommand();
  try {
    const version = await new Promise<string>((resolve, reject) =>
      execFile(command, ["--version"], { timeout: PROBE_TIMEOUT_MS }, (err, stdout) =>
        err ? reject(err) : resolve(stdout.trim()),
      ),
    );
    return pass(`AEP worker: ${command} --version: ${version}`);
  } catch (err) {
    const code = reasonOf(err);
    if (code === "ENOENT")
      return fail(
        `AEP worker: ${command} not found`,
        "run npm ci (it installs the pinned Claude Code CLI), or set workers.claude-code.command to the claude binary",
      );
    return fail(
      `AEP worker: ${command} --version failed (${code})`,
      "run it by hand to see why; set workers.claude-code.command to a working claude binary",
    );
  }
}

export function checkWorkerCredentials(worker: ClaudeCodeWorkerConfig | undefined): Check {
  if (worker?.model !== undefined)
    return pass(`AEP worker credentials: runs on model ${worker.model} through the gateway's Anthropic endpoint`);
  const env = worker?.env ?? {};
  const variable = CREDENTIAL_VARIABLES.find((name) => (env[name] ?? "") !== "");
  if (variable) return pass(`AEP worker credentials: ${variable} is handed to the CLI`);
  const configDir = env.CLAUDE_CONFIG_DIR ?? (env.HOME === undefined ? undefined : join(env.HOME, ".claude"));
  if (configDir !== undefined && existsSync(join(configDir, ".credentials.json")))
    return pass(`AEP worker credentials: the login in ${configDir}`);
  return fail(
    'AEP worker credentials: none; the CLI would answer "Not logged in" to every AEP session',
    "set workers.claude-code.model to a configured model (it then runs through anthropicEndpoint), or " +
      "workers.claude-code.apiKeyEnv to the variable holding your Anthropic key",
  );
}

/** What the CLI's sandbox runs on Linux: it refuses to start without them while it scrubs subprocess credentials. */
const SANDBOX_COMMANDS = [
  { command: "bwrap", pkg: "bubblewrap" },
  { command: "socat", pkg: "socat" },
];

/**
 * The worker asks the CLI to keep its credentials from tool subprocesses (workers/claude-code/launch.ts) unless the
 * config sets CLAUDE_CODE_SUBPROCESS_ENV_SCRUB to "0"; on Linux the CLI then needs bubblewrap and socat on PATH, or
 * every session fails at start.
 */
export function checkWorkerSandbox(
  worker: ClaudeCodeWorkerConfig | undefined,
  platform: NodeJS.Platform = process.platform,
  path = process.env.PATH ?? "",
): Check {
  if (worker?.env?.CLAUDE_CODE_SUBPROCESS_ENV_SCRUB === "0")
    return skip("AEP worker sandbox: not needed, CLAUDE_CODE_SUBPROCESS_ENV_SCRUB is 0 in workers.claude-code.env");
  if (platform !== "linux") return skip(`AEP worker sandbox: bubblewrap and socat not needed on ${platform}`);
  const missing = SANDBOX_COMMANDS.filter(({ command }) => !onPath(command, path));
  if (missing.length === 0) return pass("AEP worker sandbox: bwrap and socat found");
  const packages = missing.map((m) => m.pkg);
  return fail(
    `AEP worker sandbox: ${missing.map((m) => m.command).join(" and ")} not found on PATH; the CLI would refuse ` +
      "to start every session",
    `install ${packages.join(" and ")} (Debian, Ubuntu: apt-get install ${packages.join(" ")}), or set ` +
      'workers.claude-code.env.CLAUDE_CODE_SUBPROCESS_ENV_SCRUB to "0" (the CLI\'s tools then see its credentials)',
  );
}

function onPath(command: string, path: string): boolean {
  return path.split(delimiter).some((dir) => {
    if (dir === "") return false;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
