// `byok doctor` as a user runs it (README.md "Checking a setup"): the real CLI as a child process against local
// fake endpoints, a good setup and broken ones, asserting every line it prints and its exit status.
import { expect } from "chai";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { checkWorkerSandbox } from "../../doctor/worker-checks.js";
import { defaultClaudeCommand } from "../../workers/claude-code/launch.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";

const root = new URL("../../", import.meta.url).pathname;
const key = "sk-doctor-test-key-0123456789";
const claudeVersion = (
  JSON.parse(readFileSync(join(root, "node_modules/@anthropic-ai/claude-code/package.json"), "utf8")) as {
    version: string;
  }
).version;

interface Run {
  status: number | null;
  lines: string[];
  stderr: string;
}

/** Runs `byok doctor` with the config written to a file; resolves with its stdout lines. */
function doctor(dir: string, config: object, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const file = join(dir, "config.yaml");
  writeFileSync(file, stringify(config));
  const child = spawn(process.execPath, ["--import", "tsx", "bin/byok.ts", "doctor", "--config", file, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.on("close", (status) => resolve({ status, lines: stdout.split("\n"), stderr })),
  );
}

async function listening(port = 0): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return server;
}

const portOf = (server: Server) => (server.address() as { port: number }).port;
const close = (server: Server) => new Promise((resolve) => server.close(resolve));

/** A self-signed certificate for localhost and its key, made with openssl (what mkcert gives, without the CA). */
function makeCertificate(dir: string, name: string): { cert: string; key: string } {
  const files = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) };
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"].concat([
      "-subj",
      "/CN=localhost",
      "-keyout",
      files.key,
      "-out",
      files.cert,
    ]),
    { stdio: "ignore" },
  );
  return files;
}

/** A port nothing listens on (bound once, then released). */
async function freePort(): Promise<number> {
  const server = await listening();
  const port = portOf(server);
  await close(server);
  return port;
}

describe("byok doctor", function () {
  this.timeout(30_000);
  let dir: string;
  let provider: FakeOpenAI;
  let upstream: FakeUpstream;

  before(async () => {
    provider = await startFakeOpenAI();
    upstream = await startFakeUpstream();
    upstream.setDefault({ status: 200 });
  });
  after(async () => {
    await provider.close();
    await upstream.close();
  });
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "byok-doctor-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a good setup: every check passes, the Cursor command names the port, exit 0, the key never shown", async () => {
    const [port, aepPort] = [await freePort(), await freePort()];
    const dataDir = join(dir, "data");
    provider.enqueue({ text: "pong" });
    const config = {
      models: [
        { id: "byok-model", provider: "openai-chat", baseUrl: provider.baseUrl, apiKeyEnv: "DOCTOR_KEY", model: "m" },
      ],
      aep: { port: aepPort },
      workers: { "claude-code": { env: { ANTHROPIC_API_KEY: key } } },
    };
    const args = ["--port", String(port), "--data-dir", dataDir, "--upstream", upstream.url];
    const run = await doctor(dir, config, args, { DOCTOR_KEY: key });
    const claude = defaultClaudeCommand();
    expect(run.lines).to.deep.equal([
      `✓ config: ${join(dir, "config.yaml")} parses (1 model)`,
      "✓ model byok-model: key present (DOCTOR_KEY)",
      `✓ model byok-model: ${provider.baseUrl} answers a minimal call to m`,
      `✓ data dir ${dataDir} is writable and the store is migrated`,
      `✓ Connect port: 127.0.0.1:${port} is free`,
      `✓ AEP port: 127.0.0.1:${aepPort} is free`,
      `✓ upstream: ${upstream.url} is reachable (HTTP 200)`,
      `✓ AEP worker: ${claude} --version: ${claudeVersion} (Claude Code)`,
      "✓ AEP worker sandbox: bwrap and socat found",
      "✓ AEP worker credentials: ANTHROPIC_API_KEY is handed to the CLI",
      "",
      `Start Cursor with: cursor --test-backend-url=http://127.0.0.1:${port}`,
      "All checks passed.",
      "",
    ]);
    expect(run.status).to.equal(0);
    expect(existsSync(join(dataDir, "byok.sqlite3"))).to.equal(true);
    // The minimal call went out with the key, which stdout and stderr never show.
    expect(provider.requests.at(-1)!.headers.authorization).to.equal(`Bearer ${key}`);
    expect(provider.requests.at(-1)!.body).to.include({ model: "m", max_completion_tokens: 16 });
    expect(run.lines.join("\n") + run.stderr).not.to.contain(key);
  });

  it("a broken setup: each problem is one ✗ line with its fix, exit 1", async function () {
    // Permission bits do not stop root; a kernel directory that refuses files does.
    const asRoot = process.getuid?.() === 0;
    if (asRoot && !existsSync("/sys/kernel")) this.skip();
    const dataDir = asRoot ? "/sys/kernel" : join(dir, "ro");
    if (!asRoot) mkdirSync(dataDir, { mode: 0o500 });
    const busy = await listening();
    const p = portOf(busy);
    const dead = await freePort();
    provider.enqueue({ status: 401, body: '{"error":{"message":"Incorrect API key provided"}}' });
    const config = {
      models: [
        {
          id: "no-key",
          provider: "anthropic",
          baseUrl: "https://api.anthropic.com",
          apiKeyEnv: "UNSET_KEY",
          model: "c",
        },
        { id: "rejected", provider: "openai-chat", baseUrl: provider.baseUrl, apiKey: key, model: "m" },
        { id: "down", provider: "openai-responses", baseUrl: `http://127.0.0.1:${dead}/v1`, apiKey: key, model: "r" },
      ],
      aep: { port: 0 },
      workers: { "claude-code": { command: join(dir, "no-such-claude") } },
    };
    const args = ["--port", String(p), "--data-dir", dataDir, "--upstream", `http://127.0.0.1:${dead}`];
    // A PATH without the sandbox's commands (the doctor itself runs from process.execPath).
    const run = await doctor(dir, config, args, { UNSET_KEY: "", PATH: dir }).finally(() => close(busy));
    expect(run.lines).to.deep.equal([
      `✓ config: ${join(dir, "config.yaml")} parses (3 models)`,
      "✗ model no-key: key missing: environment variable UNSET_KEY is not set",
      "    fix: export UNSET_KEY=<your key> where the gateway starts, or remove the model from the config",
      "✓ model rejected: key present (apiKey in the config)",
      "✓ model down: key present (apiKey in the config)",
      "- model no-key: https://api.anthropic.com not called (no key)",
      `✗ model rejected: ${provider.baseUrl} refused the key: HTTP 401 from POST ` +
        `http://127.0.0.1:${new URL(provider.baseUrl).port}/v1/chat/completions: Incorrect API key provided`,
      "    fix: check that apiKey holds a valid key for this endpoint",
      `✗ model down: http://127.0.0.1:${dead}/v1 is unreachable: provider request failed: ` +
        `connect ECONNREFUSED 127.0.0.1:${dead}`,
      "    fix: check baseUrl, the network (proxy, firewall) and that the server is running",
      `✗ data dir ${dataDir} is not writable: permission denied (EACCES)`,
      "    fix: pass another --data-dir, or make this one a directory the gateway's user can write",
      `✗ Connect port: 127.0.0.1:${p} is already in use (EADDRINUSE)`,
      `    fix: stop what holds it (a gateway already running? see \`ss -ltnp 'sport = :${p}'\`), or pass another --port`,
      "✓ AEP port: 127.0.0.1, a free port picked at start-up",
      `✗ upstream: http://127.0.0.1:${dead} is unreachable (ECONNREFUSED)`,
      "    fix: check the network and proxy settings, or pass --upstream; Cursor's own models need it",
      `✗ AEP worker: ${join(dir, "no-such-claude")} not found`,
      "    fix: run npm ci (it installs the pinned Claude Code CLI), or set workers.claude-code.command to the claude binary",
      "✗ AEP worker sandbox: bwrap and socat not found on PATH; the CLI would refuse to start every session",
      "    fix: install bubblewrap and socat (Debian, Ubuntu: apt-get install bubblewrap socat), or set " +
        'workers.claude-code.env.CLAUDE_CODE_SUBPROCESS_ENV_SCRUB to "0" (the CLI\'s tools then see its credentials)',
      '✗ AEP worker credentials: none; the CLI would answer "Not logged in" to every AEP session',
      "    fix: set workers.claude-code.model to a configured model (it then runs through anthropicEndpoint), or " +
        "workers.claude-code.apiKeyEnv to the variable holding your Anthropic key",
      "",
      `Start Cursor with: cursor --test-backend-url=http://127.0.0.1:${p}`,
      "9 of 14 checks failed.",
      "",
    ]);
    expect(run.status).to.equal(1);
    expect(run.lines.join("\n") + run.stderr).not.to.contain(key);
  });

  it("an invalid config is one ✗ with the loader's message; --offline calls nothing; AEP off is said", async () => {
    const dataDir = join(dir, "data");
    const run = await doctor(dir, { models: [{ id: "x", provider: "gemini" }] }, ["--offline", "--data-dir", dataDir]);
    const file = join(dir, "config.yaml");
    expect(run.lines.slice(0, 4)).to.deep.equal([
      `✗ config: ${file}: models[0].provider: Invalid option: expected one of "openai-chat"|"openai-responses"|"anthropic"`,
      `    ${file}: models[0].baseUrl: Invalid input: expected string, received undefined`,
      `    ${file}: models[0].model: Invalid input: expected string, received undefined`,
      "    fix: correct what the message names; config.example.yaml shows every section (byok init writes it)",
    ]);
    expect(run.lines).to.include.members([
      "- upstream: https://api2.cursor.sh not called (--offline)",
      "- AEP worker: not checked, AEP is off (no --aep-port or aep.port)",
    ]);
    expect(run.status).to.equal(1);
  });

  it("TLS files: a matching pair passes and makes the Cursor command https; another key is one ✗ with its fix", async () => {
    const good = makeCertificate(dir, "good");
    const other = makeCertificate(dir, "other");
    const dataDir = join(dir, "data");
    const args = ["--offline", "--data-dir", dataDir, "--port", String(await freePort())];
    const ok = await doctor(dir, { models: [], tls: good }, args);
    const line = ok.lines.find((l) => l.startsWith("✓ TLS: "));
    expect(line).to.match(new RegExp(`^✓ TLS: ${good.cert} \\(CN=localhost\\) is valid until \\d{4}-`));
    expect(ok.lines.find((l) => l.startsWith("Start Cursor with: "))).to.match(/--test-backend-url=https:\/\//);
    expect(ok.status).to.equal(0);

    const mismatched = await doctor(dir, { models: [] }, [...args, "--tls-cert", good.cert, "--tls-key", other.key]);
    const at = mismatched.lines.findIndex((l) => l.startsWith("✗ TLS: "));
    expect(mismatched.lines[at]).to.include(`✗ TLS: ${other.key} is not the key of ${good.cert}`);
    expect(mismatched.lines[at + 1]).to.equal(
      "    fix: make a new pair (e.g. `mkcert 127.0.0.1 localhost`) and pass both files",
    );
    expect(mismatched.status).to.equal(1);
  });
});

describe("byok doctor: the AEP worker's sandbox", () => {
  it("finds bwrap and socat on PATH on Linux, names what is missing, and is not needed elsewhere or without the scrub", () => {
    const dir = mkdtempSync(join(tmpdir(), "byok-doctor-path-"));
    try {
      for (const name of ["bwrap", "socat"]) writeFileSync(join(dir, name), "#!/bin/sh\n", { mode: 0o755 });
      expect(checkWorkerSandbox(undefined, "linux", `/nonexistent:${dir}`).outcome).to.equal("pass");
      rmSync(join(dir, "bwrap"));
      writeFileSync(join(dir, "bwrap"), "", { mode: 0o644 }); // present but not executable
      const missing = checkWorkerSandbox(undefined, "linux", dir);
      expect(missing.outcome).to.equal("fail");
      expect(missing.title).to.equal(
        "AEP worker sandbox: bwrap not found on PATH; the CLI would refuse to start every session",
      );
      expect(missing.fix).to.match(/^install bubblewrap \(Debian, Ubuntu: apt-get install bubblewrap\)/);
      expect(checkWorkerSandbox(undefined, "darwin", dir).outcome).to.equal("skip");
      const unscrubbed = { env: { CLAUDE_CODE_SUBPROCESS_ENV_SCRUB: "0" } };
      expect(checkWorkerSandbox(unscrubbed, "linux", dir).outcome).to.equal("skip");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
