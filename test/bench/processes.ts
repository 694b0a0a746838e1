// The bench's child processes: the real gateway (`byok serve`, optionally under strace or with --cpu-prof), the
// raw-relay and pass-through baselines, and the fakes (provider + upstream). Each server announces
// "... listening on <url>" on stdout; every child is killed when the bench exits, however it exits.
import { type ChildProcess, fork, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildDist } from "../../scripts/build.js";
import type { DiagnosticsSnapshot } from "../../transport/diagnostics.js";
import type { FakesReady, FakesReply, FakesRequest, ProviderRecord } from "./fakes-protocol.js";
import { npmStartCommand } from "./npm-start.js";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

export interface ServerProcess {
  name: string;
  url: string;
  /** The node process itself (not a strace wrapper around it). */
  pid: number;
  diagnostics(reset?: boolean): Promise<DiagnosticsSnapshot>;
  /** Resident set size now, from /proc. */
  rssBytes(): number;
  stop(): Promise<void>;
}

export interface GatewayLaunch {
  upstream: string;
  /** Run under `strace -f -ttt -T -e trace=fsync,fdatasync` writing to this file. */
  straceFile?: string;
  /** Write a V8 CPU profile into this directory when the gateway exits. */
  cpuProfDir?: string;
  /** The config file's YAML (default: no models; runs name their endpoint by credentials). */
  config?: string;
}

/** The gateway as `npm start` runs it: the dist/ bundle, rebuilt first so it matches the sources. */
export async function startGateway(launch: GatewayLaunch): Promise<ServerProcess> {
  await buildDist();
  const dir = await mkdtemp(join(tmpdir(), "byok-bench-"));
  const config = join(dir, "config.yaml");
  await writeFile(config, launch.config ?? "models: []\n");
  const start = npmStartCommand();
  const node = [
    ...(launch.cpuProfDir ? ["--cpu-prof", "--cpu-prof-dir", launch.cpuProfDir] : []),
    ...start.nodeArgs,
    "serve",
    ...[
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--data-dir",
      join(dir, "data"),
      "--config",
      config,
      "--upstream",
      launch.upstream,
    ],
  ];
  const [command, args] = launch.straceFile
    ? [
        "strace",
        [
          "-f",
          "-qq",
          "--seccomp-bpf",
          "-ttt",
          "-T",
          "-e",
          "trace=fsync,fdatasync",
          "-e",
          "signal=none",
          "-o",
          launch.straceFile,
          process.execPath,
          ...node,
        ],
      ]
    : [process.execPath, node];
  const gateway = await startServer("gateway", command, args as string[], { ...start.env, BYOK_DIAGNOSTICS: "1" });
  return { ...gateway, stop: () => gateway.stop().then(() => rm(dir, { recursive: true, force: true })) };
}

export function startRawRelay(): Promise<ServerProcess> {
  return startServer("raw-relay", process.execPath, ["--import", "tsx", "test/bench/raw-relay.ts"], {});
}

export function startPassthrough(upstream: string): Promise<ServerProcess> {
  return startServer(
    "passthrough",
    process.execPath,
    ["--import", "tsx", "test/bench/passthrough.ts", upstream],
    {},
    false,
  );
}

async function startServer(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  hasDiagnostics = true,
): Promise<ServerProcess> {
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => (live.delete(child), resolve())));
  const stderrTail: string[] = [];
  child.stderr!.setEncoding("utf8").on("data", (text: string) => {
    stderrTail.push(text);
    if (stderrTail.length > 20) stderrTail.shift();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within 30 s\n${stderrTail.join("")}`)),
      30_000,
    );
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      out += text;
      const match = / listening on (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!.replace(/\/$/, ""));
      }
    });
    void exited.then(() => reject(new Error(`${name} exited before it listened\n${stderrTail.join("")}`)));
  });
  const diagnostics = (reset = false) =>
    getJson<DiagnosticsSnapshot>(`${url}/__byok/diagnostics${reset ? "?reset=1" : ""}`);
  const pid = hasDiagnostics ? (await diagnostics()).pid : child.pid!;
  return {
    name,
    url,
    pid,
    diagnostics,
    rssBytes: () => rssOf(pid),
    stop: async () => {
      // SIGTERM to node itself: a strace wrapper then exits with it, and --cpu-prof is written on the way out.
      process.kill(pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000).unref())]);
      if (live.has(child)) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** NaN where there is no /proc (not Linux): the RSS figures then read n/a instead of failing the run. */
function rssOf(pid: number): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return NaN;
  }
  const kib = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kib === undefined ? NaN : Number(kib) * 1024;
}

export function getJson<T>(url: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (p: Buffer) => parts.push(p));
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: HTTP ${res.statusCode}`));
        resolve(JSON.parse(Buffer.concat(parts).toString("utf8")) as T);
      });
    });
    req.on("error", reject);
    req.end();
  });
}

export interface Fakes extends FakesReady {
  /** The provider's records for a tag, in arrival order (and forgets them). */
  records(tag: string): Promise<ProviderRecord[]>;
  stop(): Promise<void>;
}

export async function startFakes(): Promise<Fakes> {
  const child = fork(join(repoRoot, "test/bench/fakes.ts"), [], {
    cwd: repoRoot,
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => (live.delete(child), resolve())));
  const ready = await new Promise<FakesReady>((resolve, reject) => {
    child.once("message", (m) => resolve(m as FakesReady));
    void exited.then(() => reject(new Error("the fakes child exited before it was ready")));
  });
  let nextId = 0;
  const waiting = new Map<number, (records: ProviderRecord[]) => void>();
  child.on("message", (m) => {
    const reply = m as FakesReply;
    waiting.get(reply.id)?.(reply.records);
    waiting.delete(reply.id);
  });
  return {
    ...ready,
    records: (tag) =>
      new Promise((resolve) => {
        const ask: FakesRequest = { id: ++nextId, tag };
        waiting.set(ask.id, resolve);
        child.send(ask);
      }),
    stop: async () => {
      child.disconnect();
      await exited;
    },
  };
}
