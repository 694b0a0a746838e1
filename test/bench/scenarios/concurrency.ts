// Scenario 2, concurrency: N runs streaming at once, each paced like a real model (a delta every 20 ms). The
// figure is the gap between consecutive text_deltas at the client — what a user sees as stutter — through the
// gateway versus through the raw relay under the same load; plus the server's peak RSS (sampled from /proc),
// its growth per active run over the idle RSS, and its event-loop delay over the level.
import { runTurn, type TurnRecord } from "../bench-client.js";
import { type BenchContext, type Figure, figure, ratioOf } from "../figures.js";
import type { ServerProcess } from "../processes.js";
import { percentile } from "../stats.js";

const PACE_MS = 20;
const MB = 1024 * 1024;

interface LevelResult {
  gaps: number[];
  idleRss: number;
  peakRss: number;
  delayP99: number;
  delayMax: number;
  cpuMsPerRun: number;
}

let seq = 0;

async function level(ctx: BenchContext, server: ServerProcess, runs: number, deltas: number): Promise<LevelResult> {
  const idleRss = server.rssBytes();
  let peakRss = idleRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, server.rssBytes())), 50);
  const before = await server.diagnostics(true);
  const tag = `concurrency-${server.name}-${runs}-${++seq}`;
  let turns: TurnRecord[];
  try {
    turns = await Promise.all(
      Array.from({ length: runs }, (_, i) =>
        runTurn({
          baseUrl: server.url,
          providerUrl: ctx.fakes.providerUrl,
          conversationId: `${tag}-${i}`,
          directive: { tag, deltas, intervalMs: PACE_MS },
          workspace: ctx.workspace,
        }),
      ),
    );
  } finally {
    clearInterval(sampler);
  }
  const after = await server.diagnostics(true);
  const { eventLoopDelay } = after;
  const cpuMsPerRun = (after.cpuUserUs + after.cpuSystemUs - before.cpuUserUs - before.cpuSystemUs) / 1000 / runs;
  await ctx.fakes.records(tag);
  const failed = turns.filter((t) => !t.end.ok || t.deltas !== deltas);
  if (failed.length)
    throw new Error(
      `${server.name}: ${failed.length} of ${runs} concurrent runs failed or lost deltas (${JSON.stringify(failed[0]!.end)})`,
    );
  const gaps = turns.flatMap((t) => t.deltaArrivals.slice(1).map((at, i) => at - t.deltaArrivals[i]!));
  return {
    gaps,
    idleRss,
    peakRss: Math.max(peakRss, server.rssBytes()),
    delayP99: eventLoopDelay.p99,
    delayMax: eventLoopDelay.max,
    cpuMsPerRun,
  };
}

export async function concurrencyScenario(ctx: BenchContext): Promise<Figure[]> {
  const levels = ctx.quick ? [10, 20] : [50, 100, 200];
  const deltas = ctx.quick ? 30 : 100;
  const top = levels[levels.length - 1]!;
  const figures: Figure[] = [];
  for (const runs of levels) {
    const raw = await level(ctx, ctx.raw, runs, deltas);
    const gw = await level(ctx, ctx.gateway, runs, deltas);
    const name = (what: string) => `${runs} runs: ${what}`;
    const s = "2 concurrency";
    for (const p of [50, 99]) {
      const g = percentile(gw.gaps, p);
      const r = percentile(raw.gaps, p);
      const target =
        p === 99 && runs === top ? { target: "extra gap (gateway − raw) ≤ 25 ms at p99", met: g - r <= 25 } : {};
      figures.push(
        figure({
          scenario: s,
          figure: name(`gap between consecutive text_deltas (paced every ${PACE_MS} ms), p${p}`),
          unit: "ms",
          gateway: g,
          baseline: r,
          ratio: ratioOf(g, r),
          note: `extra gap ${(g - r).toFixed(2)} ms`,
          ...target,
        }),
      );
    }
    figures.push(
      figure({
        scenario: s,
        figure: name("peak RSS"),
        unit: "MB",
        gateway: gw.peakRss / MB,
        baseline: raw.peakRss / MB,
        ratio: ratioOf(gw.peakRss, raw.peakRss),
      }),
    );
    const perRun = (r: LevelResult) => (r.peakRss - r.idleRss) / runs / MB;
    const target = runs === top ? { target: "≤ 1 MB per active run", met: perRun(gw) <= 1 } : {};
    figures.push(
      figure({
        scenario: s,
        figure: name("RSS growth per active run"),
        unit: "MB",
        gateway: perRun(gw),
        baseline: perRun(raw),
        ratio: ratioOf(perRun(gw), perRun(raw)),
        ...target,
      }),
    );
    figures.push(
      figure({
        scenario: s,
        figure: name("server CPU per run"),
        unit: "ms",
        gateway: gw.cpuMsPerRun,
        baseline: raw.cpuMsPerRun,
        ratio: ratioOf(gw.cpuMsPerRun, raw.cpuMsPerRun),
        note: `${deltas} deltas per run`,
      }),
    );
    figures.push(
      figure({
        scenario: s,
        figure: name("event-loop delay p99"),
        unit: "ms",
        gateway: gw.delayP99,
        baseline: raw.delayP99,
        ratio: ratioOf(gw.delayP99, raw.delayP99),
        note: `max gateway ${gw.delayMax.toFixed(1)} ms, raw ${raw.delayMax.toFixed(1)} ms`,
      }),
    );
  }
  return figures;
}
