// Scenario 5, relay of every other path: 1,000 small GETs (8 in flight on keep-alive connections) and one 10 MB
// streamed body, through the gateway's relay and through a bare node:http pass-through to the same upstream. One
// 10 MB body crosses loopback in 15–50 ms, so a single reading is mostly the machine's noise: it is read 3 times in
// a row per repeat, on each side, and the figure is the median of all of them. The body is read by a client that
// allocates nothing per read (body-reader.ts). Both are timed only after a warm-up on each side (3,000 small
// requests, then 30 bodies): without it both sides' rates climbed ~5× from the first repeat to the fifth (every
// process of the chain warming up; 10 MB bodies from ~100 to ~900 MB/s), so the medians fell mid-climb and the
// ratios swung with them; the gateway's CPU per relayed MB settles after ~25 bodies (docs/performance.md).
import { Agent, request } from "node:http";
import { readBodyBytes } from "../body-reader.js";
import { type BenchContext, type Figure, figure } from "../figures.js";
import { startPassthrough } from "../processes.js";
import { median, nowMs, percentile } from "../stats.js";

const IN_FLIGHT = 8;
const BIG_BODY_READINGS = 3;

function get(url: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      let bytes = 0;
      res.on("data", (p: Buffer) => (bytes += p.byteLength));
      res.on("end", () =>
        res.statusCode === 200 ? resolve(bytes) : reject(new Error(`GET ${url}: HTTP ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

async function smallRequests(base: string, count: number): Promise<{ perSecond: number; latencies: number[] }> {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const latencies: number[] = [];
  let next = 0;
  const started = nowMs();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < count) {
        const t0 = nowMs();
        await get(`${base}/small?n=${next}`, agent);
        latencies.push(nowMs() - t0);
      }
    }),
  );
  agent.destroy();
  return { perSecond: count / ((nowMs() - started) / 1000), latencies };
}

async function bigBody(base: string, bytes: number): Promise<number> {
  const t0 = nowMs();
  const received = await readBodyBytes(base, `/big?bytes=${bytes}`);
  if (received !== bytes) throw new Error(`expected ${bytes} bytes through ${base}, got ${received}`);
  return bytes / (1024 * 1024) / ((nowMs() - t0) / 1000);
}

export async function relayScenario(ctx: BenchContext): Promise<Figure[]> {
  const count = ctx.quick ? 200 : 1_000;
  const bytes = (ctx.quick ? 2 : 10) * 1024 * 1024;
  const repeats = ctx.quick ? 1 : 5;
  const warmUp = ctx.quick ? 0 : 3_000;
  const bigWarmUp = ctx.quick ? 0 : 30;
  const bare = await startPassthrough(ctx.fakes.upstreamUrl);
  const small = { gateway: [] as number[], bare: [] as number[] };
  const latency = { gateway: [] as number[], bare: [] as number[] };
  const big = { gateway: [] as number[], bare: [] as number[] };
  // Sides alternate (ABBA) so a drift in the machine's speed falls on both alike, and every small-request pass
  // runs before the big bodies: passes after 10 MB bodies read slower (one sitting: 2,335 req/s against 3,924
  // before any), and in the first repeat only the gateway's pass came after them.
  const pair = [
    ["bare", bare.url],
    ["gateway", ctx.gateway.url],
  ] as const;
  const sides = (i: number) => (i % 2 === 0 ? pair : [...pair].reverse());
  try {
    // The bodies' warm-up first, so that the small requests' warm-up stands between them and the timed passes.
    for (const [, url] of sides(0)) for (let k = 0; k < bigWarmUp; k++) await bigBody(url, bytes);
    for (const [, url] of sides(0)) await smallRequests(url, warmUp);
    for (let i = 0; i < repeats; i++) {
      for (const [side, url] of sides(i)) {
        const r = await smallRequests(url, count);
        small[side].push(r.perSecond);
        latency[side].push(...r.latencies);
      }
    }
    for (let i = 0; i < repeats; i++) {
      for (const [side, url] of sides(i)) {
        for (let k = 0; k < BIG_BODY_READINGS; k++) big[side].push(await bigBody(url, bytes));
      }
    }
  } finally {
    await bare.stop();
  }
  const s = "5 relay";
  const rate = (g: number, b: number, what: string, unit: string) =>
    figure({
      scenario: s,
      figure: what,
      unit,
      gateway: g,
      baseline: b,
      ratio: g / b,
      target: "ratio ≥ 0.8",
      met: g / b >= 0.8,
    });
  return [
    rate(
      median(small.gateway),
      median(small.bare),
      `${count} small requests, ${IN_FLIGHT} in flight (median of ${repeats})`,
      "req/s",
    ),
    figure({
      scenario: s,
      figure: "small request latency p99",
      unit: "ms",
      gateway: percentile(latency.gateway, 99),
      baseline: percentile(latency.bare, 99),
      ratio: percentile(latency.gateway, 99) / percentile(latency.bare, 99),
    }),
    rate(
      median(big.gateway),
      median(big.bare),
      `one ${bytes / 1024 / 1024} MB streamed body (median of ${repeats * BIG_BODY_READINGS})`,
      "MB/s",
    ),
  ];
}
