// `npm start` as a user runs it: the script execs the gateway in place of npm's shell, so the SIGTERM (or SIGINT)
// npm forwards to its child reaches the gateway itself, and nothing survives npm holding the port. Before, the
// shell died and the gateway stayed behind, re-parented. The script also sets the gateway's glibc tunables.
import { expect } from "chai";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitUntil } from "../support/util.js";

const root = new URL("../../", import.meta.url).pathname;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether any process of the group is alive (signal 0 checks without sending anything). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/__byok/health`)).ok;
  } catch {
    return false;
  }
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  const bound = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (bound) await new Promise<void>((resolve) => server.close(() => resolve()));
  return bound;
}

describe("npm start", function () {
  this.timeout(60_000);
  let dataDir: string;
  let npm: ChildProcess | undefined;
  beforeEach(() => (dataDir = mkdtempSync(join(tmpdir(), "byok-npm-start-"))));
  afterEach(() => {
    // A failed assertion must not leave a gateway behind: end the whole group we started.
    if (npm?.pid !== undefined && groupAlive(npm.pid)) process.kill(-npm.pid, "SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** `npm start` on a free port in its own process group, once the gateway answers its health check. */
  async function start(env: Record<string, string> = {}): Promise<{ port: number; stderr: () => string }> {
    const port = await freePort();
    // Its own process group, so "nothing left" can be checked for everything npm started.
    npm = spawn("npm", ["start", "--", "--port", String(port), "--data-dir", dataDir], {
      cwd: root,
      detached: true,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    npm.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const healthDeadline = Date.now() + 45_000;
    while (!(await healthy(port))) {
      if (Date.now() > healthDeadline || npm.exitCode !== null) throw new Error(`never healthy:\n${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { port, stderr: () => stderr };
  }

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} to npm's pid stops the gateway: the port is free and no process of the group is left`, async () => {
      const { port, stderr } = await start();
      const pgid = npm!.pid!;
      process.kill(pgid, signal);
      await waitUntil(
        () => !groupAlive(pgid),
        15_000,
        () => `processes of the group survived ${signal}:\n${stderr()}`,
      );
      expect(await portFree(port), "the port is free again").to.equal(true);
      expect(stderr()).to.include('"msg":"gateway stopped"');
    });
  }

  it("runs the gateway with glibc's malloc trim and mmap thresholds raised (docs/performance.md fixes 31, 35)", async function () {
    if (process.platform !== "linux") this.skip();
    const { port } = await start({ BYOK_DIAGNOSTICS: "1" });
    const { pid } = (await (await fetch(`http://127.0.0.1:${port}/__byok/diagnostics`)).json()) as { pid: number };
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    expect(environ).to.include.members(["MALLOC_TRIM_THRESHOLD_=67108864", "MALLOC_MMAP_THRESHOLD_=33554432"]);
    process.kill(npm!.pid!, "SIGTERM");
    await waitUntil(
      () => !groupAlive(npm!.pid!),
      15_000,
      () => "npm start survived SIGTERM",
    );
  });
});
