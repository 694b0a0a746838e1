// `npm run bench -- --quick` as a smoke run inside `npm test`: every scenario runs end to end against the real
// gateway and the baselines and reports its figures. No thresholds here: the numbers are for docs/performance.md.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import type { Figure } from "./figures.js";
import { getJson } from "./processes.js";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

function runBench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "test/bench/main.ts", ...args], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (t: string) => (stdout += t));
    child.stderr.setEncoding("utf8").on("data", (t: string) => (stderr += t));
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("bench: the diagnostics channel and a --quick smoke run", function () {
  this.timeout(180_000);
  after(() => killAllGateways());

  it("serves /__byok/diagnostics only to a gateway started with BYOK_DIAGNOSTICS=1", async () => {
    const dir = await mkdtemp(join(tmpdir(), "byok-bench-diag-"));
    try {
      const plain = await startGatewayProcess({
        dataDir: join(dir, "plain"),
        config: { models: [] },
        env: { BYOK_DIAGNOSTICS: "" },
      });
      const enabled = await startGatewayProcess({
        dataDir: join(dir, "enabled"),
        config: { models: [] },
        env: { BYOK_DIAGNOSTICS: "1" },
      });
      const off = await fetch(`${plain.url}/__byok/diagnostics`);
      expect(off.status).to.equal(404);
      const on = await getJson<{ pid: number; cpuUserUs: number; eventLoopDelay: { samples: number } }>(
        `${enabled.url}/__byok/diagnostics`,
      );
      expect(on.pid).to.equal(enabled.pid);
      expect(on.cpuUserUs).to.be.greaterThan(0);
      await Promise.all([plain.stop(), enabled.stop()]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("runs every scenario against the gateway and its baselines, one JSON line per figure, and writes the report", async () => {
    const dir = await mkdtemp(join(tmpdir(), "byok-bench-smoke-"));
    try {
      const report = join(dir, "performance.md");
      const { code, stdout, stderr } = await runBench(["--quick", "--write", report]);
      expect(code, stderr).to.equal(0);
      const figures = stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Figure);
      expect([...new Set(figures.map((f) => f.scenario))]).to.deep.equal([
        "1 streaming",
        "2 concurrency",
        "2b fast streams",
        "3 conversation",
        "4 checkpoint",
        "5 relay",
        "6 start-up",
        "7 prompt cache",
      ]);
      for (const f of figures) {
        // JSON has no NaN: a figure that could not be measured says why instead.
        if (f.gateway === null) expect(f.note, f.figure).to.match(/not measured/);
        else expect(f.gateway, f.figure).to.be.a("number");
      }
      expect(stdout).to.include("summary (quick run");
      // A smoke run is too small to judge a target: no verdict either way.
      expect(stdout).to.include("smoke run, targets not judged").and.not.include("MISSED");
      const written = await readFile(report, "utf8");
      expect(written.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| scenario"))).to.have.length(
        figures.length,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
