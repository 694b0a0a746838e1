// Start-up errors of `byok serve`, as a user meets them: each is one line on stderr naming the flag, listener,
// directory or file and the cause, exit status 2, no stack trace, and nothing started (no "gateway started" line,
// no knex migration message). Runs the TypeScript entry through tsx; the bundle `npm start` runs is what the e2e
// tests start.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;

function serve(...args: string[]) {
  const started = Date.now();
  const run = spawnSync(process.execPath, ["--import", "tsx", "bin/byok.ts", "serve", ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 20_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, ms: Date.now() - started };
}

/** Exactly one stderr line, `byok: <message>`, exit 2, and no sign that anything started. */
function expectStartupError(run: ReturnType<typeof serve>, message: string | RegExp): void {
  expect(run.status, run.stderr).to.equal(2);
  const lines = run.stderr.split("\n").filter((line) => line !== "");
  expect(lines, run.stderr).to.have.length(1);
  if (typeof message === "string") expect(lines[0]).to.equal(`byok: ${message}`);
  else expect(lines[0]).to.match(message);
  expect(run.stdout).to.equal("");
  expect(run.stderr).not.to.match(/gateway started|migrat|\n\s+at /);
}

describe("byok serve: start-up errors", () => {
  let dir: string;
  let holder: Server;
  let busyPort: number;
  before(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    busyPort = (holder.address() as { port: number }).port;
  });
  after(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "byok-startup-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a Connect port in use names the port and the listener", () => {
    const run = serve("--port", String(busyPort), "--data-dir", dir);
    expectStartupError(run, `the Connect port (--port) 127.0.0.1:${busyPort} is already in use (EADDRINUSE)`);
  });

  it("an AEP port in use names the port and the AEP listener, before anything is announced", () => {
    const run = serve("--port", "0", "--aep-port", String(busyPort), "--data-dir", dir);
    expectStartupError(
      run,
      `the AEP port (--aep-port or aep.port) 127.0.0.1:${busyPort} is already in use (EADDRINUSE)`,
    );
  });

  it("an AEP port in use from the config file names the AEP listener too", () => {
    const config = join(dir, "config.yaml");
    writeFileSync(config, `aep:\n  port: ${busyPort}\n`);
    const run = serve("--port", "0", "--data-dir", join(dir, "data"), "--config", config);
    expectStartupError(
      run,
      `the AEP port (--aep-port or aep.port) 127.0.0.1:${busyPort} is already in use (EADDRINUSE)`,
    );
  });

  it("a TLS certificate that cannot be read is named, before anything starts", () => {
    const missing = join(dir, "missing.pem");
    const run = serve("--port", "0", "--data-dir", dir, "--tls-cert", missing, "--tls-key", missing);
    expectStartupError(run, `TLS certificate ${missing} cannot be read (ENOENT)`);
  });

  it("a --host that does not resolve names --host", () => {
    const run = serve("--host", "no-such-host.invalid", "--port", "0", "--data-dir", dir);
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(/^byok: --host "no-such-host\.invalid" does not resolve to an address \(E[A-Z]+\)\n/);
  });

  it("a data dir that is a file is named as not a directory", () => {
    const file = join(dir, "file");
    writeFileSync(file, "");
    expectStartupError(serve("--port", "0", "--data-dir", file), `data dir ${file} is not a directory`);
  });

  it("a data dir below a file cannot be created, and says why", () => {
    const file = join(dir, "file");
    writeFileSync(file, "");
    const below = join(file, "data");
    expectStartupError(
      serve("--port", "0", "--data-dir", below),
      `data dir ${below} cannot be created: a part of the path is not a directory (ENOTDIR)`,
    );
  });

  it("a data dir that cannot be written is named with the reason, before SQLite is opened", function () {
    // Permission bits do not stop root; a kernel directory that refuses files does.
    const asRoot = process.getuid?.() === 0;
    if (asRoot && !existsSync("/sys/kernel")) this.skip();
    const readOnly = asRoot ? "/sys/kernel" : join(dir, "ro");
    if (!asRoot) mkdirSync(readOnly, { mode: 0o500 });
    expectStartupError(
      serve("--port", "0", "--data-dir", readOnly),
      `data dir ${readOnly} is not writable: permission denied (EACCES)`,
    );
  });

  it("a data dir that can never exist (/proc/x) fails at once instead of hanging", function () {
    if (!existsSync("/proc/self")) this.skip();
    const run = serve("--port", "0", "--data-dir", "/proc/x");
    expectStartupError(run, "data dir /proc/x cannot be created: no such file or directory (ENOENT)");
    expect(run.ms).to.be.below(15_000);
  });

  it("a late config error (aep.host without a token) names the config file", () => {
    const config = join(dir, "config.yaml");
    writeFileSync(config, "aep:\n  port: 0\n  host: 0.0.0.0\n");
    expectStartupError(
      serve("--port", "0", "--data-dir", join(dir, "data"), "--config", config),
      `${config}: aep.token is required when aep.host is not a loopback address (0.0.0.0)`,
    );
  });
});
