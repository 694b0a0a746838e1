// Start-up: from spawning `node dist/byok.js serve` as `npm start` runs it (npm-start.ts) to the first 200 from
// /__byok/health on a fresh data directory, against the same sources run through tsx in the same run (the way
// `npm start` worked before the build step).
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildDist } from "../../../scripts/build.js";
import { type BenchContext, type Figure, figure } from "../figures.js";
import { npmStartCommand } from "../npm-start.js";
import { getJson } from "../processes.js";
import { median, nowMs } from "../stats.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** Milliseconds from spawn to a healthy gateway, on its own fresh data directory. */
async function timeToHealthy(entry: string[], env: Record<string, string> = {}): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "byok-bench-start-"));
  const config = join(dir, "config.yaml");
  await writeFile(config, "models: []\n");
  const args = [...entry, "serve", "--port", "0", "--data-dir", join(dir, "data"), "--config", config];
  const started = nowMs();
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "ignore"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.setEncoding("utf8").on("data", (text: string) => {
        out += text;
        const match = / listening on (\S+)/.exec(out);
        if (match) resolve(match[1]!.replace(/\/$/, ""));
      });
      void exited.then(() => reject(new Error(`${entry.join(" ")} exited before it listened`)));
    });
    await getJson(`${url}/__byok/health`);
    return nowMs() - started;
  } finally {
    child.kill("SIGTERM");
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

export async function startupScenario(ctx: BenchContext): Promise<Figure[]> {
  await buildDist();
  const runs = ctx.quick ? 1 : 7;
  const start = npmStartCommand();
  const times = { dist: [] as number[], tsx: [] as number[] };
  for (let i = 0; i < runs; i++) {
    times.tsx.push(await timeToHealthy(["--import", "tsx", "bin/byok.ts"]));
    times.dist.push(await timeToHealthy(start.nodeArgs, start.env));
  }
  ctx.log(`startup: dist ${times.dist.map(Math.round)} ms, tsx ${times.tsx.map(Math.round)} ms`);
  const gateway = median(times.dist);
  const baseline = median(times.tsx);
  return [
    figure({
      scenario: "6 start-up",
      figure: `spawn to healthy, compiled bundle vs tsx (median of ${runs})`,
      unit: "ms",
      gateway,
      baseline,
      ratio: gateway / baseline,
      target: "≤ 500 ms",
      met: gateway <= 500,
    }),
  ];
}
