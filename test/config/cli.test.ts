// The `byok` CLI as an external program: exit codes, usage and the `serve` contract (README.md
// "Command line"). Runs the TypeScript entry through tsx; the bundle `npm start` runs is what the bin shim test and
// every end-to-end test start.
import { expect } from "chai";
import { buildDist } from "../../scripts/build.js";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../../", import.meta.url).pathname;
const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;

function byok(...args: string[]) {
  return byokWith({}, ...args);
}

function byokWith(env: Record<string, string>, ...args: string[]) {
  const run = spawnSync(process.execPath, ["--import", "tsx", "bin/byok.ts", ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 15000,
    env: { ...process.env, ...env },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("byok CLI", () => {
  for (const args of [["--help"], ["-h"], ["help"], ["serve", "--help"]]) {
    it(`byok ${args.join(" ")} prints the usage on stdout and exits 0`, () => {
      const run = byok(...args);
      expect(run).to.include({ status: 0, stderr: "" });
      expect(run.stdout).to.match(/^Usage: byok <command>/);
      const flags = [
        "--host",
        "--port",
        "--data-dir",
        "--config",
        "--upstream",
        "--aep-port",
        "--tls-cert",
        "--tls-key",
        "--log-level",
        "--offline",
      ];
      for (const flag of [...flags, "doctor", "init", "help"]) expect(run.stdout).to.contain(flag);
    });
  }

  it("--version prints the package version", () => {
    expect(byok("--version")).to.include({ status: 0, stdout: `${version}\n` });
  });

  it("the npm bin shim runs the built bundle", async () => {
    await buildDist();
    const run = spawnSync(process.execPath, ["bin/byok.js", "--version"], {
      cwd: root,
      encoding: "utf8",
      timeout: 15000,
    });
    expect(run.stdout).to.equal(`${version}\n`);
  });

  // Each error is one line naming the flag (or command) and what it expects, then the usage; never a stack trace.
  const usageErrors: Array<[string, string[], string]> = [
    ["an unknown flag", ["serve", "--bogus"], "unknown option --bogus"],
    ["an unknown short flag", ["serve", "-x"], "unknown option -x"],
    ["a non-numeric port", ["serve", "--port", "abc"], '--port expects a port number 0-65535, got "abc"'],
    ["a port above 65535", ["serve", "--port", "65536"], '--port expects a port number 0-65535, got "65536"'],
    ["a negative port", ["serve", "--port", "-1"], '--port expects a port number 0-65535, got "-1"'],
    ["a negative port given inline", ["serve", "--port=-1"], '--port expects a port number 0-65535, got "-1"'],
    ["a flag without its value", ["serve", "--port"], "--port expects a port number 0-65535"],
    ["a flag followed by another flag", ["serve", "--data-dir", "--port", "1"], "--data-dir expects a directory"],
    ["a value given to a switch", ["--help=yes"], "--help takes no value"],
    ["an empty host", ["serve", "--host", ""], "--host expects a host name or address"],
    ["a non-http upstream", ["serve", "--upstream", "ftp://x"], '--upstream expects an http(s) URL, got "ftp://x"'],
    [
      "an unparseable upstream",
      ["serve", "--upstream", "not a url"],
      '--upstream expects an http(s) URL, got "not a url"',
    ],
    ["no command", [], "missing command"],
    ["an unknown command", ["launch"], 'unknown command "launch"'],
    ["two commands", ["serve", "diagrams"], "too many arguments"],
    [
      "a serve option on diagrams",
      ["diagrams", "--port", "1"],
      "--port is an option of serve and doctor, not of diagrams",
    ],
    ["a doctor option on serve", ["serve", "--offline"], "--offline is an option of doctor, not of serve"],
    [
      "an unknown log level",
      ["serve", "--log-level", "loud"],
      '--log-level expects one of trace, debug, info, warn, error, fatal, silent, got "loud"',
    ],
    ["an unknown log format", ["serve", "--log-format", "xml"], '--log-format expects one of json, pretty, got "xml"'],
    ["a TLS certificate without its key", ["serve", "--tls-cert", "cert.pem"], "--tls-cert needs --tls-key"],
    ["a TLS key without its certificate", ["serve", "--tls-key", "key.pem"], "--tls-key needs --tls-cert"],
  ];
  for (const [what, args, message] of usageErrors) {
    it(`exits 2 with one line and the usage on ${what}`, () => {
      const run = byok(...args);
      expect(run.status).to.equal(2);
      expect(run.stderr.startsWith(`byok: ${message}\n\nUsage: byok <command>`), run.stderr).to.equal(true);
      expect(run.stderr).not.to.match(/\n\s+at /);
      expect(run.stdout).to.equal("");
    });
  }

  it("names BYOK_LOG_LEVEL when its value is not a level, and --log-level wins over it", () => {
    const run = byokWith({ BYOK_LOG_LEVEL: "chatty" }, "serve", "--port", "0");
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(
      /^byok: BYOK_LOG_LEVEL expects one of trace, debug, info, warn, error, fatal, silent, got "chatty"\n/,
    );
    const flagWins = byokWith({ BYOK_LOG_LEVEL: "chatty" }, "serve", "--log-level", "loud");
    expect(flagWins.stderr).to.match(/^byok: --log-level expects one of .*, got "loud"\n/);
  });

  it("exits 2 with the config error, without the key, on a bad config", () => {
    const dir = mkdtempSync(join(tmpdir(), "byok-cli-"));
    const file = join(dir, "bad.yaml");
    writeFileSync(
      file,
      "models:\n  - id: m\n    provider: anthropic\n    baseUrl: ftp://x\n    apiKey: sk-cli-secret\n    model: c\n",
    );
    const run = byok("serve", "--config", file, "--data-dir", dir);
    rmSync(dir, { recursive: true, force: true });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.equal(`byok: ${file}: models[0].baseUrl: expected an http(s) URL\n`);
    expect(run.stderr + run.stdout).not.to.contain("sk-cli-secret");
  });

  it("exits 2 on an unreadable config file", () => {
    const run = byok("serve", "--config", "/nonexistent/byok.yaml");
    expect(run.status).to.equal(2);
    expect(run.stderr).to.contain("/nonexistent/byok.yaml: cannot read config file (ENOENT)");
  });

  it("serve prints its listening line and banner, answers health, and exits 0 on SIGTERM", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "byok-serve-"));
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "bin/byok.ts", "serve", "--port", "0", "--data-dir", dataDir],
      // No default config file of the machine's user is read: XDG_CONFIG_HOME points at an empty directory.
      { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, XDG_CONFIG_HOME: dataDir } },
    );
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let stdout = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString();
        const match = /^byok-gateway listening on (http:\/\/\S+)\n/.exec(stdout);
        if (match) resolve(match[1]!);
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code} before listening`)));
    });
    const health = await fetch(`${url}/__byok/health`);
    expect(health.status).to.equal(200);
    child.kill("SIGTERM");
    expect(await exited).to.equal(0);
    expect(stdout.split("\n")).to.deep.equal([
      `byok-gateway listening on ${url}`,
      `byok-gateway token in ${join(dataDir, "gateway-token")} (clients send it as "Authorization: Bearer <token>")`,
      `  Cursor:             cursor --test-backend-url=${url}`,
      "  Anthropic endpoint: off (no anthropicEndpoint)",
      "  AEP v1:             off (no --aep-port or aep.port)",
      `  status page:        ${url}/__byok/`,
      "  models:             none configured: every run goes to the upstream",
      "  config:             none",
      `  data dir:           ${dataDir}`,
      "",
    ]);
    rmSync(dataDir, { recursive: true, force: true });
  });
});
