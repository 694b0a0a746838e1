// `npm start` as a user runs it: the script execs the gateway in place of npm's shell, so the SIGTERM (or SIGINT)
// npm forwards to its child reaches the gateway itself, and nothing survives npm holding the port. Before, the
// shell died and the gateway stayed behind, re-parented.
import { expect } from "chai";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
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

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} to npm's pid stops the gateway: the port is free and no process of the group is left`, async () => {
      const port = await freePort();
      // Its own process group, so "nothing left" can be checked for everything npm started.
      npm = spawn("npm", ["start", "--", "--port", String(port), "--data-dir", dataDir], {
        cwd: root,
        detached: true,
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      npm.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const pgid = npm.pid!;
      const healthDeadline = Date.now() + 45_000;
      while (!(await healthy(port))) {
        if (Date.now() > healthDeadline || npm.exitCode !== null) throw new Error(`never healthy:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      process.kill(pgid, signal);
      await waitUntil(
        () => !groupAlive(pgid),
        15_000,
        () => `processes of the group survived ${signal}:\n${stderr}`,
      );
      expect(await portFree(port), "the port is free again").to.equal(true);
      expect(stderr).to.include('"msg":"gateway stopped"');
    });
  }
});
