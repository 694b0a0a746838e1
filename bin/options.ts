// What the commands that start from a config share: the checks of each flag's value and the default paths
// (README.md "Command line"). Every error names the flag or variable and what it expects.
import { lookup } from "node:dns/promises";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from "../log/levels.js";

/** A command line the user must correct: one line naming the flag, then the usage. */
export class UsageError extends Error {}

export const DEFAULT_PORT = "8787";
export const DEFAULT_UPSTREAM = "https://api2.cursor.sh";
export const LOG_LEVEL_ENV = "BYOK_LOG_LEVEL";

export function parsePort(text: string, flag = "--port"): number {
  const port = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535))
    throw new UsageError(`${flag} expects a port number 0-65535, got ${JSON.stringify(text)}`);
  return port;
}

/** A name that does not resolve would otherwise fail deep inside listen() as a bare getaddrinfo error. */
export async function checkHost(host: string): Promise<string> {
  try {
    await lookup(host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "lookup failed";
    throw new UsageError(`--host ${JSON.stringify(host)} does not resolve to an address (${code})`);
  }
  return host;
}

export function parseUpstream(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {}
  if (url?.protocol !== "http:" && url?.protocol !== "https:")
    throw new UsageError(`--upstream expects an http(s) URL, got ${JSON.stringify(text)}`);
  return text;
}

/** `--log-level` wins over BYOK_LOG_LEVEL; either must name a pino level. */
export function parseLogLevel(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): LogLevel {
  const [source, text] = flag !== undefined ? ["--log-level", flag] : [LOG_LEVEL_ENV, env[LOG_LEVEL_ENV]];
  if (text === undefined || text === "") return "info";
  if (!(LOG_LEVELS as readonly string[]).includes(text))
    throw new UsageError(`${source} expects one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(text)}`);
  return text as LogLevel;
}

/** The readable form for a person at a terminal, JSON lines for everything else. */
export function parseLogFormat(flag: string | undefined, isTTY = Boolean(process.stderr.isTTY)): LogFormat {
  if (flag === undefined) return isTTY ? "pretty" : "json";
  if (!(LOG_FORMATS as readonly string[]).includes(flag))
    throw new UsageError(`--log-format expects one of ${LOG_FORMATS.join(", ")}, got ${JSON.stringify(flag)}`);
  return flag as LogFormat;
}

// XDG Base Directory spec: a relative XDG_*_HOME is invalid and must be ignored.
function xdgHome(variable: string, fallback: string[]): string {
  const xdg = process.env[variable];
  return xdg !== undefined && isAbsolute(xdg) ? xdg : join(homedir(), ...fallback);
}

export function defaultDataDir(): string {
  return join(xdgHome("XDG_DATA_HOME", [".local", "share"]), "byok-gateway");
}

/** Where `byok init` writes the example config, and where serve and doctor look without --config. */
export function defaultConfigFile(): string {
  return join(xdgHome("XDG_CONFIG_HOME", [".config"]), "byok-gateway", "config.yaml");
}

/** --config, else the default config file when it exists, else none (no configured models). */
export function configFileFrom(flag: string | undefined): string | undefined {
  if (flag !== undefined) return flag;
  const file = defaultConfigFile();
  return existsSync(file) ? file : undefined;
}
