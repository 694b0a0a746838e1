// Scenario 3, long conversation, and the timing half of scenario 4: one conversation driven turn after turn, each
// turn one tool round (Read) and a short text answer, the checkpoint of each turn handed back on the next as
// Cursor does. Per turn: the server's CPU time (process.cpuUsage() across the turn, less the cost of reading it),
// the bytes of blobs it SET, and the provider requests' size and prefix property; per tool round, the settled
// checkpoint's cost as the client sees it with its own ACK time taken out.
import { runTurn } from "../bench-client.js";
import { type BenchContext, type Figure, figure } from "../figures.js";
import type { ProviderRecord } from "../fakes-protocol.js";
import type { ServerProcess } from "../processes.js";
import { median, percentile, sum } from "../stats.js";
import type { ConversationStateStructure } from "../../../proto/gen/agent/v1/agent_pb.js";

interface TurnFigures {
  cpuMs: number;
  setBytes: number;
  sets: number;
  requests: ProviderRecord[];
  settled: Array<{ beforeSetsMs: number; afterAcksMs: number }>;
}

let seq = 0;

async function cpuMs(server: ServerProcess): Promise<number> {
  const d = await server.diagnostics();
  return (d.cpuUserUs + d.cpuSystemUs) / 1000;
}

/** What reading the CPU clock itself costs the server (an HTTP request), subtracted from every turn. */
async function readingCost(server: ServerProcess): Promise<number> {
  const costs: number[] = [];
  for (let i = 0; i < 15; i++) costs.push(-(await cpuMs(server)) + (await cpuMs(server)));
  return median(costs);
}

async function conversation(
  ctx: BenchContext,
  server: ServerProcess,
  turns: number,
  toolRounds: number,
): Promise<TurnFigures[]> {
  const conversationId = `conversation-${server.name}-${++seq}`;
  const blobs = new Map<string, Uint8Array>();
  const cost = await readingCost(server);
  let checkpoint: ConversationStateStructure | undefined;
  const out: TurnFigures[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    const tag = `${conversationId}-${turn}`;
    const before = await cpuMs(server);
    const record = await runTurn({
      baseUrl: server.url,
      providerUrl: ctx.fakes.providerUrl,
      conversationId,
      directive: { tag, deltas: 20, toolRounds, conversation: conversationId },
      workspace: ctx.workspace,
      blobs,
      ...(checkpoint ? { checkpoint } : {}),
    });
    const used = (await cpuMs(server)) - before - cost;
    if (!record.end.ok)
      throw new Error(`${server.name}: turn ${turn} failed: ${record.end.code} ${record.end.message}`);
    checkpoint = record.checkpoint;
    out.push({
      cpuMs: used,
      setBytes: record.kvSetBytes,
      sets: record.kvSets,
      requests: await ctx.fakes.records(tag),
      settled: record.settledCheckpoints,
    });
  }
  return out;
}

/** The median over the 5 turns around `turn` (1-based), kept inside the conversation. */
function around(values: readonly number[], turn: number): number {
  const start = Math.min(Math.max(turn - 3, 0), Math.max(values.length - 5, 0));
  return median(values.slice(start, start + 5));
}

export async function conversationScenario(ctx: BenchContext): Promise<Figure[]> {
  const turns = ctx.quick ? 10 : 200;
  const points = ctx.quick ? [1, 5, 10] : [1, 50, 100, 200];
  await conversation(ctx, ctx.gateway, ctx.quick ? 2 : 5, 1); // warm-up: JIT and caches, discarded
  ctx.log(`conversation: ${turns} turns…`);
  const gw = await conversation(ctx, ctx.gateway, turns, 1);
  // The raw relay keeps no history: its per-turn CPU is the floor for relaying the same provider pass.
  const raw = await conversation(ctx, ctx.raw, ctx.quick ? 5 : 20, 1);
  const s = "3 conversation";
  const last = points[points.length - 1]!;
  const cpu = gw.map((t) => t.cpuMs);
  const setBytes = gw.map((t) => t.setBytes);
  const figures: Figure[] = [
    figure({
      scenario: s,
      figure: "server CPU per turn, turn 1",
      unit: "ms",
      gateway: around(cpu, 1),
      baseline: median(raw.map((t) => t.cpuMs)),
      ratio: around(cpu, 1) / median(raw.map((t) => t.cpuMs)),
      note: "baseline: raw relay, same provider pass, no tool round or state",
    }),
  ];
  const growth = (what: string, unit: string, values: number[], target?: string) => {
    for (const turn of points.slice(1)) {
      const ratio = around(values, turn) / around(values, 1);
      const goal = turn === last && target ? { target, met: ratio <= 1.25 } : {};
      figures.push(
        figure({
          scenario: s,
          figure: `${what}, turn ${turn}`,
          unit,
          gateway: around(values, turn),
          baseline: around(values, 1),
          ratio,
          note: "baseline: the same conversation's turn 1; median of 5 turns",
          ...goal,
        }),
      );
    }
  };
  growth("server CPU per turn", "ms", cpu, `turn ${last} ≤ 1.25× turn 1`);
  figures.push(
    figure({
      scenario: s,
      figure: "blob bytes SET per turn, turn 1",
      unit: "bytes",
      gateway: around(setBytes, 1),
      baseline: null,
      ratio: null,
      note: `${around(
        gw.map((t) => t.sets),
        1,
      )} SETs per turn`,
    }),
  );
  growth("blob bytes SET per turn", "bytes", setBytes, `turn ${last} ≤ 1.25× turn 1`);
  const requests = gw.flatMap((t) => t.requests);
  const extending = requests.slice(1).filter((r) => r.prefixOk).length;
  figures.push(
    figure({
      scenario: s,
      figure: "provider requests that extend the previous one byte for byte",
      unit: "requests",
      gateway: extending,
      baseline: requests.length - 1,
      ratio: extending / (requests.length - 1),
      target: "all",
      met: extending === requests.length - 1,
    }),
  );
  growth(
    "provider request bytes",
    "bytes",
    gw.map((t) => t.requests[0]!.requestBytes),
  );
  growth(
    "provider request growth (new messages)",
    "bytes",
    gw.map((t) => sum(t.requests.map((r) => r.newMessageBytes))),
  );

  const rounds = gw.flatMap((t) => t.settled);
  const settled = rounds.map((r) => r.beforeSetsMs + r.afterAcksMs);
  for (const p of [50, 99]) {
    const goal = p === 50 ? { target: "≤ 5 ms (p50)", met: percentile(settled, 50) <= 5 } : {};
    const parts = `result → first SET ${percentile(
      rounds.map((r) => r.beforeSetsMs),
      p,
    ).toFixed(2)} ms, last ACK → checkpoint ${percentile(
      rounds.map((r) => r.afterAcksMs),
      p,
    ).toFixed(2)} ms (p${p} of each)`;
    figures.push(
      figure({
        scenario: "4 checkpoint",
        figure: `last tool result → settled checkpoint, client ACK time excluded, p${p} (${settled.length} rounds)`,
        unit: "ms",
        gateway: percentile(settled, p),
        baseline: null,
        ratio: null,
        note: parts,
        ...goal,
      }),
    );
  }
  return figures;
}
