// Scenario 2b, fast streams (issue 17): 200 runs at once, each 500 deltas written 10 ms apart (a 100 tokens/s
// model). Deltas paced like that arrive one per provider read, so nothing can be coalesced and the per-delta path
// is what the event loop pays for. Figures, gateway against the raw relay under the same load: each delta's
// latency from the provider's write to the client's arrival, the gap between consecutive text_deltas at the
// client, and the server's CPU per delta. Each side carries the load twice, in the order raw, gateway, gateway,
// raw, and its two loads are pooled: with one load each, one after the other, a change in the machine's speed
// between them fell whole on the difference (the raw relay's own p50 read 5–11 ms from run to run).
import { runTurn, type TurnRecord } from "../bench-client.js";
import { type BenchContext, type Figure, figure, ratioOf } from "../figures.js";
import type { ServerProcess } from "../processes.js";
import { percentile } from "../stats.js";

const PACE_MS = 10;
const S = "2b fast streams";

interface Load {
  /** Per delta: client arrival − provider write, ms. */
  latencies: number[];
  /** Between consecutive text_delta frames at the client, ms. */
  gaps: number[];
  cpuUsPerDelta: number;
}

let seq = 0;

async function load(ctx: BenchContext, server: ServerProcess, runs: number, deltas: number): Promise<Load> {
  const before = await server.diagnostics(true);
  const tag = `fast-${server.name}-${++seq}`;
  const turns = await Promise.all(
    Array.from({ length: runs }, (_, i) =>
      runTurn({
        baseUrl: server.url,
        providerUrl: ctx.fakes.providerUrl,
        conversationId: `${tag}-${i}`,
        directive: { tag: `${tag}-${i}`, deltas, intervalMs: PACE_MS, stampWrites: true },
        workspace: ctx.workspace,
      }),
    ),
  );
  const after = await server.diagnostics(true);
  const cpuUs = after.cpuUserUs + after.cpuSystemUs - before.cpuUserUs - before.cpuSystemUs;
  const failed = turns.filter((t) => !t.end.ok || t.deltas !== deltas);
  if (failed.length)
    throw new Error(
      `${server.name}: ${failed.length} of ${runs} fast streams failed or lost deltas (${JSON.stringify(failed[0]!.end)})`,
    );
  const latencies: number[] = [];
  for (const [i, turn] of turns.entries()) {
    const [record] = await ctx.fakes.records(`${tag}-${i}`);
    const writes = record?.writes ?? [];
    for (const [j, at] of perDeltaArrivals(turn).entries()) latencies.push(at - writes[j]!);
  }
  const gaps = turns.flatMap((t) => t.deltaArrivals.slice(1).map((at, i) => at - t.deltaArrivals[i]!));
  return { latencies, gaps, cpuUsPerDelta: cpuUs / (runs * deltas) };
}

function pooled(a: Load, b: Load): Load {
  return {
    latencies: [...a.latencies, ...b.latencies],
    gaps: [...a.gaps, ...b.gaps],
    cpuUsPerDelta: (a.cpuUsPerDelta + b.cpuUsPerDelta) / 2,
  };
}

/** Each delta's arrival: the arrival of the frame that carried it. */
function perDeltaArrivals(turn: TurnRecord): number[] {
  return turn.deltaArrivals.flatMap((at, i) => Array<number>(turn.frameDeltas[i]!).fill(at));
}

export async function fastStreamsScenario(ctx: BenchContext): Promise<Figure[]> {
  const runs = ctx.quick ? 20 : 200;
  const deltas = ctx.quick ? 50 : 500;
  const raw1 = await load(ctx, ctx.raw, runs, deltas);
  const gw = pooled(await load(ctx, ctx.gateway, runs, deltas), await load(ctx, ctx.gateway, runs, deltas));
  const raw = pooled(raw1, await load(ctx, ctx.raw, runs, deltas));
  const name = (what: string) => `${runs} runs × ${deltas} deltas every ${PACE_MS} ms: ${what}`;
  const figures: Figure[] = [];
  for (const p of [50, 99]) {
    const g = percentile(gw.latencies, p);
    const r = percentile(raw.latencies, p);
    const target = p === 50 ? { target: "added latency (gateway − raw) ≤ 3 ms at p50", met: g - r <= 3 } : {};
    figures.push(
      figure({
        scenario: S,
        figure: name(`delta latency, provider write → client arrival, p${p}`),
        unit: "ms",
        gateway: g,
        baseline: r,
        ratio: ratioOf(g, r),
        note: `added ${(g - r).toFixed(2)} ms`,
        ...target,
      }),
    );
  }
  for (const p of [50, 99]) {
    const g = percentile(gw.gaps, p);
    const r = percentile(raw.gaps, p);
    const target = p === 99 ? { target: "extra gap (gateway − raw) ≤ 25 ms at p99", met: g - r <= 25 } : {};
    figures.push(
      figure({
        scenario: S,
        figure: name(`gap between consecutive text_deltas, p${p}`),
        unit: "ms",
        gateway: g,
        baseline: r,
        ratio: ratioOf(g, r),
        note: `extra gap ${(g - r).toFixed(2)} ms`,
        ...target,
      }),
    );
  }
  const cpuRatio = gw.cpuUsPerDelta / raw.cpuUsPerDelta;
  figures.push(
    figure({
      scenario: S,
      figure: name("server CPU per delta"),
      unit: "µs",
      gateway: gw.cpuUsPerDelta,
      baseline: raw.cpuUsPerDelta,
      ratio: cpuRatio,
      note: "whole runs (start, stream, checkpoints) ÷ deltas",
      target: "≤ 2× the raw relay",
      met: cpuRatio <= 2,
    }),
  );
  return figures;
}
