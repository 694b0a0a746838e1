// `byok serve` with the AEP endpoint, as a user runs it: --aep-port overrides aep.port, the listener serves /ws, and
// SIGTERM closes it with the gateway. Also the AEP part of the config file.
import { expect } from "chai";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../engine/config.js";
import { waitUntil } from "../support/util.js";
import { AepClient } from "./aep-client.js";

const root = new URL("../../", import.meta.url).pathname;

describe("byok serve with AEP", () => {
  it("--aep-port overrides aep.port; the endpoint answers init and ping; SIGTERM closes it and exits 0", async () => {
    const dir = mkdtempSync(join(tmpdir(), "byok-aep-serve-"));
    const config = join(dir, "config.yaml");
    writeFileSync(config, "aep:\n  port: 1\n");
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "bin/byok.ts",
        "serve",
        "--port",
        "0",
        "--aep-port",
        "0",
        "--data-dir",
        dir,
        "--config",
        config,
      ],
      {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let stdout = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString();
        const match =
          /^byok-gateway AEP v1 listening on (ws:\/\/127\.0\.0\.1:\d+\/ws)\nbyok-gateway listening on /.exec(stdout);
        if (match) resolve(match[1]!);
      });
      void exited.then((code) => reject(new Error(`serve exited with ${code} before listening`)));
    });
    expect(url).to.not.contain(":1/");
    // No token configured: one was generated at first start, kept in the data dir for the gateway's user only.
    const tokenFile = join(dir, "gateway-token");
    await waitUntil(
      () => stdout.includes(`byok-gateway token in ${tokenFile} `),
      5000,
      () => stdout,
    );
    expect(statSync(tokenFile).mode & 0o777).to.equal(0o600);
    const token = readFileSync(tokenFile, "utf8").trim();
    expect(stdout, "the token itself is never printed").to.not.contain(token);
    const refused = await AepClient.connect(url);
    refused.send("init", { worker: "claude-code" });
    expect((await refused.next("error")).event.data).to.deep.include({ code: "AUTH_REQUIRED" });
    const client = await AepClient.connect(url, { headers: { Authorization: `Bearer ${token}` } });
    client.send("init", { worker: "claude-code" });
    expect((await client.next("state")).event.data).to.deep.equal({ state: "created" });
    client.send("ping", {});
    expect((await client.next("pong")).seq).to.equal(0);
    child.kill("SIGTERM");
    expect((await client.closed).code).to.equal(1001);
    expect(await exited).to.equal(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it("exits 2 on a bad --aep-port", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "bin/byok.ts", "serve", "--aep-port", "http"], {
      cwd: root,
      encoding: "utf8",
      timeout: 15000,
    });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.match(/^byok: --aep-port expects a port number 0-65535, got "http"\n/);
  });

  it("refuses to serve AEP on a non-loopback address without a token", () => {
    const dir = mkdtempSync(join(tmpdir(), "byok-aep-open-"));
    const config = join(dir, "config.yaml");
    writeFileSync(config, "aep:\n  port: 0\n  host: 0.0.0.0\n");
    const run = spawnSync(
      process.execPath,
      ["--import", "tsx", "bin/byok.ts", "serve", "--port", "0", "--data-dir", dir, "--config", config],
      { cwd: root, encoding: "utf8", timeout: 15000 },
    );
    rmSync(dir, { recursive: true, force: true });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.equal(
      `byok: ${config}: aep.token is required when aep.host is not a loopback address (0.0.0.0)\n`,
    );
  });
});

describe("config: aep and workers.claude-code", () => {
  it("keeps the worker's command, args, env and permission mode", () => {
    const config = parseConfig(
      JSON.stringify({
        aep: { port: 0 },
        workers: {
          "claude-code": {
            command: "/opt/claude",
            args: ["--model", "x"],
            env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:1" },
            permissionMode: "acceptEdits",
          },
        },
      }),
      "c",
      {},
    );
    expect(config.workers).to.deep.equal({
      "claude-code": {
        command: "/opt/claude",
        args: ["--model", "x"],
        env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:1" },
        permissionMode: "acceptEdits",
      },
    });
  });

  it("takes the Anthropic key from the variable apiKeyEnv names, and says which one is missing without any value", () => {
    const config = parseConfig(
      JSON.stringify({ workers: { "claude-code": { apiKeyEnv: "MY_KEY", env: { A: "b" } } } }),
      "c",
      { MY_KEY: "sk-from-env" },
    );
    expect(config.workers?.["claude-code"]).to.deep.equal({ env: { A: "b", ANTHROPIC_API_KEY: "sk-from-env" } });
    expect(() =>
      parseConfig(JSON.stringify({ workers: { "claude-code": { apiKeyEnv: "MY_KEY" } } }), "c", {}),
    ).to.throw("c: workers.claude-code.apiKeyEnv: environment variable MY_KEY is not set");
  });

  it("refuses unknown worker kinds, unknown keys and a bad permission mode, naming the path", () => {
    expect(() => parseConfig(JSON.stringify({ workers: { opencode: {} } }), "c", {})).to.throw(/c: workers/);
    expect(() => parseConfig(JSON.stringify({ workers: { "claude-code": { commandd: "x" } } }), "c", {})).to.throw(
      /c: workers\.claude-code/,
    );
    expect(() =>
      parseConfig(JSON.stringify({ workers: { "claude-code": { permissionMode: "yolo" } } }), "c", {}),
    ).to.throw(/workers\.claude-code\.permissionMode/);
    expect(() => parseConfig(JSON.stringify({ aep: { port: 70000 } }), "c", {})).to.throw(/aep\.port/);
  });

  it("takes aep.host/token/workdir without aep.port (the port may come from --aep-port)", () => {
    expect(parseConfig(JSON.stringify({ aep: { token: "t", workdir: tmpdir() } }), "c", {}).aep).to.deep.equal({
      token: "t",
      workdir: tmpdir(),
    });
  });

  it("refuses an aep.workdir that is relative or not an existing directory, naming the field", () => {
    expect(() => parseConfig(JSON.stringify({ aep: { port: 0, workdir: "relative/dir" } }), "c", {})).to.throw(
      "c: aep.workdir: must be an absolute path",
    );
    const missing = join(tmpdir(), "byok-no-such-workdir");
    expect(() => parseConfig(JSON.stringify({ aep: { port: 0, workdir: missing } }), "c", {})).to.throw(
      `c: aep.workdir: ${missing} is not an existing directory`,
    );
  });
});
