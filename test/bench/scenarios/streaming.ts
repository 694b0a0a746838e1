// Scenario 1, streaming relay: one run of many text deltas through each server (deltas per second, from the
// provider's first content byte to the client's last delta), then many short runs for the latency the server
// adds between the provider's first content byte and the client's first text_delta.
import { runTurn } from "../bench-client.js";
import { type BenchContext, type Figure, figure, ratioOf } from "../figures.js";
import type { ServerProcess } from "../processes.js";
import { median, percentile } from "../stats.js";

let seq = 0;

async function oneRun(
  ctx: BenchContext,
  server: ServerProcess,
  deltas: number,
): Promise<{ deltasPerS: number; firstDeltaMs: number }> {
  const tag = `streaming-${server.name}-${++seq}`;
  const turn = await runTurn({
    baseUrl: server.url,
    providerUrl: ctx.fakes.providerUrl,
    conversationId: tag,
    directive: { tag, deltas },
    workspace: ctx.workspace,
  });
  if (!turn.end.ok) throw new Error(`${server.name}: streaming run failed: ${turn.end.code} ${turn.end.message}`);
  if (turn.deltas !== deltas) throw new Error(`${server.name}: expected ${deltas} deltas, received ${turn.deltas}`);
  const [record] = await ctx.fakes.records(tag);
  const firstByte = record!.firstByteAt;
  const last = turn.deltaArrivals[turn.deltaArrivals.length - 1]!;
  return { deltasPerS: deltas / ((last - firstByte) / 1000), firstDeltaMs: turn.deltaArrivals[0]! - firstByte };
}

export async function streamingScenario(ctx: BenchContext): Promise<Figure[]> {
  const deltas = ctx.quick ? 2_000 : 20_000;
  const repeats = ctx.quick ? 1 : 3;
  const shortRuns = ctx.quick ? 10 : 100;
  const rate = { gateway: [] as number[], raw: [] as number[] };
  for (let i = 0; i < repeats; i++) {
    // Alternating, so a burst of load from the rest of the machine hits both sides alike.
    rate.raw.push((await oneRun(ctx, ctx.raw, deltas)).deltasPerS);
    rate.gateway.push((await oneRun(ctx, ctx.gateway, deltas)).deltasPerS);
  }
  ctx.log(
    `streaming: ${deltas} deltas × ${repeats}: gateway ${rate.gateway.map(Math.round)} /s, raw ${rate.raw.map(Math.round)} /s`,
  );
  const first = { gateway: [] as number[], raw: [] as number[] };
  for (let i = 0; i < shortRuns; i++) {
    first.raw.push((await oneRun(ctx, ctx.raw, 5)).firstDeltaMs);
    first.gateway.push((await oneRun(ctx, ctx.gateway, 5)).firstDeltaMs);
  }
  const gw = median(rate.gateway);
  const raw = median(rate.raw);
  const figures = [
    figure({
      scenario: "1 streaming",
      figure: `relay throughput (${deltas} deltas, median of ${repeats})`,
      unit: "deltas/s",
      gateway: gw,
      baseline: raw,
      ratio: gw / raw,
      target: "ratio ≥ 0.7",
      met: gw / raw >= 0.7,
    }),
  ];
  for (const p of [50, 99]) {
    const g = percentile(first.gateway, p);
    const r = percentile(first.raw, p);
    const extra = p === 50 ? { target: "≤ 1 ms over the raw relay (p50)", met: g - r <= 1 } : {};
    figures.push(
      figure({
        scenario: "1 streaming",
        figure: `first delta after provider's first byte, p${p} (${shortRuns} runs)`,
        unit: "ms",
        gateway: g,
        baseline: r,
        ratio: ratioOf(g, r),
        note: `${(g - r).toFixed(2)} ms over the raw relay`,
        ...extra,
      }),
    );
  }
  return figures;
}
