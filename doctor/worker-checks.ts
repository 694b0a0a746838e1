// The AEP worker: the Claude Code CLI exists, reports its version, and will have credentials. The worker starts
// with an allow-listed environment and its own HOME, so only what the config hands it counts.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ClaudeCodeWorkerConfig } from "../engine/config.js";
import { defaultClaudeCommand } from "../workers/claude-code/launch.js";
import { type Check, fail, PROBE_TIMEOUT_MS, pass, reasonOf } from "./check.js";

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
