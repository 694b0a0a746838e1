// Runs the real gateway as a child process (`byok serve`), exactly as a user would, and waits until it announces
// its URL. Every child is tracked so an `after` hook (killAllGateways) — or, failing that, process exit — ends it.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { buildDist, DIST_ENTRY } from "../../scripts/build.js";
import { waitUntil } from "./util.js";

export interface GatewayProcessOptions {
  dataDir: string;
  /** An object is written as YAML; a string is written verbatim (so tests can hand over invalid config). */
  config: object | string;
  upstream?: string;
  /** The --host to bind (default 127.0.0.1); the returned url always names 127.0.0.1 for a wildcard address. */
  host?: string;
  /** More `serve` flags, e.g. ["--log-format", "pretty"]. */
  args?: string[];
  /** Added to the parent's environment. */
  env?: Record<string, string>;
  /** TypeScript to run (with tsx) instead of the gateway's bundle, relative to the repository root; the harness's own
   * tests use it. */
  entry?: string;
  readyTimeoutMs?: number;
}

export interface ExitStatus {
  code: number | null;
  signal: string | null;
}

export interface GatewayProcess {
  url: string;
  pid: number;
  stdoutLines(): string[];
  stderrLines(): string[];
  /**
   * The stderr lines that match, once at least `count` do: a log line can reach the pipe after the events it
   * accompanies reached the client. Rejects after `timeoutMs` naming the match and how many were seen.
   */
  loggedLines(match: (line: string) => boolean, count?: number, timeoutMs?: number): Promise<string[]>;
  /** Sends the signal (default SIGTERM) and waits for exit; SIGKILLs and throws if it does not exit in time. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitStatus>;
  kill(): Promise<void>;
}

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
let built: Promise<string> | undefined;

/** The gateway as users run it: the dist/ bundle, rebuilt once per test process so it matches the sources. */
function builtGateway(): Promise<string> {
  built ??= buildDist().then(() => DIST_ENTRY);
  return built;
}
const readyLine = /^byok-gateway listening on (\S+)/;
const live = new Set<ChildProcess>();

export async function startGatewayProcess(opts: GatewayProcessOptions): Promise<GatewayProcess> {
  const configDir = await mkdtemp(join(tmpdir(), "byok-config-"));
  const configFile = join(configDir, "config.yaml");
  await writeFile(configFile, typeof opts.config === "string" ? opts.config : stringify(opts.config));
  const args = [
    ...(opts.entry ? ["--import", "tsx", opts.entry] : ["--enable-source-maps", await builtGateway()]),
    "serve",
    "--host",
    opts.host ?? "127.0.0.1",
    "--port",
    "0",
    "--data-dir",
    opts.dataDir,
    "--config",
    configFile,
    ...(opts.upstream ? ["--upstream", opts.upstream] : []),
    ...(opts.args ?? []),
  ];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  const exited = new Promise<ExitStatus>((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      void rm(configDir, { recursive: true, force: true });
      resolve({ code, signal });
    }),
  );
  const stdout = collectLines(child.stdout!);
  const stderr = collectLines(child.stderr!);

  const url = await waitForReady(child, stdout, stderr, exited, opts.readyTimeoutMs ?? 20_000);

  return {
    url,
    pid: child.pid!,
    stdoutLines: () => [...stdout.lines],
    stderrLines: () => [...stderr.lines],
    loggedLines: async (match, count = 1, timeoutMs = 5_000) => {
      const matching = () => stderr.lines.filter(match);
      await waitUntil(
        () => matching().length >= count,
        timeoutMs,
        () => `${matching().length} of ${count} log lines matching ${match} within ${timeoutMs} ms`,
      );
      return matching();
    },
    stop: async (signal = "SIGTERM", timeoutMs = 10_000) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const status = await Promise.race([exited, timeout(timeoutMs)]);
      if (status !== "timeout") return status;
      child.kill("SIGKILL");
      await exited;
      throw new Error(`gateway ${child.pid} did not exit within ${timeoutMs} ms of ${signal}\n${tail(stderr.lines)}`);
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** For an `after` hook: no gateway may outlive the test run. */
export async function killAllGateways(): Promise<void> {
  const children = [...live];
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
}

// Last resort when a test run ends without the after hook (e.g. mocha bails out): `exit` handlers must be sync.
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

interface LineCollector {
  lines: string[];
  onLine: Set<(line: string) => void>;
}

function collectLines(stream: NodeJS.ReadableStream): LineCollector {
  const collector: LineCollector = { lines: [], onLine: new Set() };
  let partial = "";
  stream.setEncoding("utf8");
  stream.on("data", (text: string) => {
    const parts = (partial + text).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) {
      collector.lines.push(line);
      for (const listener of collector.onLine) listener(line);
    }
  });
  stream.on("end", () => {
    if (partial) collector.lines.push(partial);
  });
  return collector;
}

function waitForReady(
  child: ChildProcess,
  stdout: LineCollector,
  stderr: LineCollector,
  exited: Promise<ExitStatus>,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (): void => {
      settled = true;
      clearTimeout(timer);
      stdout.onLine.delete(onLine);
    };
    const fail = (why: string): void => {
      finish();
      child.kill("SIGKILL");
      reject(
        new Error(
          `gateway did not start: ${why}\n--- stdout ---\n${tail(stdout.lines)}\n--- stderr ---\n${tail(stderr.lines)}`,
        ),
      );
    };
    const onLine = (line: string): void => {
      const match = readyLine.exec(line.trim());
      if (!match || settled) return;
      finish();
      resolve(match[1]!.replace(/\/$/, "").replace(/\/\/(0\.0\.0\.0|\[::\])/, "//127.0.0.1"));
    };
    const timer = setTimeout(() => fail(`no "byok-gateway listening on <url>" line within ${timeoutMs} ms`), timeoutMs);
    stdout.onLine.add(onLine);
    void exited.then((status) => {
      // Give the stderr pipe a moment to drain so the failure message shows why it exited.
      if (!settled) setTimeout(() => fail(`exited early with code ${status.code} signal ${status.signal}`), 50);
    });
  });
}

function tail(lines: string[], count = 60): string {
  return lines.slice(-count).join("\n");
}

function timeout(ms: number): Promise<"timeout"> {
  return new Promise((resolve) => setTimeout(() => resolve("timeout"), ms).unref());
}
