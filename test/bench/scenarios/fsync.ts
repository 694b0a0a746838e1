// Scenario 4, durability cost: fsync/fdatasync calls per tool round, counted by strace on a second gateway (so
// tracing never slows the timed scenarios). strace -f --seccomp-bpf stops the process only on those two calls;
// -ttt stamps let the calls be split by phase. One phase of turns with one tool round each, one with two: their
// difference per turn is the cost of one more tool round, the first phase per turn the cost of a whole turn.
// The store's commits (COMMIT statements and autocommitted writes, counted by the diagnostics' onQuery hook) are
// reported alongside, and alone where strace is not installed: with synchronous = FULL in WAL mode each commit is
// one WAL fsync.
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runTurn } from "../bench-client.js";
import { type BenchContext, type Figure, figure } from "../figures.js";
import { startGateway, type ServerProcess } from "../processes.js";
import { percentile } from "../stats.js";
import type { ConversationStateStructure } from "../../../proto/gen/agent/v1/agent_pb.js";

interface Phase {
  from: number;
  to: number;
  commits: number;
}

async function phase(ctx: BenchContext, gateway: ServerProcess, turns: number, toolRounds: number): Promise<Phase> {
  const conversationId = `fsync-${toolRounds}-${++seq}`;
  const from = Date.now() / 1000;
  const commitsBefore = (await gateway.diagnostics()).storeCommits;
  let checkpoint: ConversationStateStructure | undefined;
  for (let turn = 1; turn <= turns; turn++) {
    const tag = `${conversationId}-${turn}`;
    const record = await runTurn({
      baseUrl: gateway.url,
      providerUrl: ctx.fakes.providerUrl,
      conversationId,
      directive: { tag, deltas: 5, toolRounds },
      workspace: ctx.workspace,
      ...(checkpoint ? { checkpoint } : {}),
    });
    if (!record.end.ok) throw new Error(`fsync phase: turn ${turn} failed: ${record.end.code} ${record.end.message}`);
    checkpoint = record.checkpoint;
    await ctx.fakes.records(tag);
  }
  const to = Date.now() / 1000;
  return { from, to, commits: (await gateway.diagnostics()).storeCommits - commitsBefore };
}

let seq = 0;

/** Turns with one tool round, then turns with two, after one warm-up turn (a fresh store creates rows once). */
async function phases(ctx: BenchContext, gateway: ServerProcess, turns: number): Promise<{ one: Phase; two: Phase }> {
  await phase(ctx, gateway, 1, 1);
  const one = await phase(ctx, gateway, turns, 1);
  const two = await phase(ctx, gateway, turns, 2);
  return { one, two };
}

/**
 * The commits carry the target (issue 17: two per single-call round, the group commit); the fsyncs beside them add
 * what SQLite does on its own, the WAL auto-checkpoint.
 */
function commitFigures(one: Phase, two: Phase, turns: number, source: string): Figure[] {
  const perRound = (two.commits - one.commits) / turns;
  return [
    figure({
      scenario: "4 checkpoint",
      figure: `store commits per tool round (${source})`,
      unit: "commits",
      gateway: perRound,
      baseline: null,
      ratio: null,
      target: "≤ 2 (one WAL fsync per commit)",
      met: perRound <= 2,
      note: `COMMITs and autocommitted writes seen by the store's onQuery hook; 2-round turns minus 1-round turns, ${turns} turns each`,
    }),
    figure({
      scenario: "4 checkpoint",
      figure: `store commits per turn with one tool round (${source})`,
      unit: "commits",
      gateway: one.commits / turns,
      baseline: null,
      ratio: null,
    }),
  ];
}

export async function fsyncScenario(ctx: BenchContext): Promise<Figure[]> {
  const turns = ctx.quick ? 3 : 20;
  if (spawnSync("strace", ["-V"]).status !== 0) {
    ctx.log("fsync: strace is not installed; counting the store's commits instead");
    const { one, two } = await phases(ctx, ctx.gateway, turns);
    return commitFigures(one, two, turns, "strace not installed");
  }
  const dir = await mkdtemp(join(tmpdir(), "byok-bench-strace-"));
  const file = join(dir, "fsync.trace");
  const gateway = await startGateway({ upstream: ctx.fakes.upstreamUrl, straceFile: file });
  let one: Phase;
  let two: Phase;
  try {
    ({ one, two } = await phases(ctx, gateway, turns));
  } finally {
    await gateway.stop();
  }
  // e.g. `4242  1764690000.123456 fdatasync(12) = 0 <0.002345>`: pid, start time, call, result, time spent in it.
  const calls = (await readFile(file, "utf8"))
    .split("\n")
    .map((line) => /^\d+\s+(\d+\.\d+) f(?:data)?sync\(.*<(\d+\.\d+)>$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ at: Number(m[1]), seconds: Number(m[2]) }));
  await rm(dir, { recursive: true, force: true });
  const inPhase = (p: Phase) => calls.filter((c) => c.at >= p.from && c.at <= p.to);
  const count = (p: Phase) => inPhase(p).length;
  const durations = [...inPhase(one), ...inPhase(two)].map((c) => c.seconds * 1000);
  const perTurn = count(one) / turns;
  const perRound = (count(two) - count(one)) / turns;
  return [
    figure({
      scenario: "4 checkpoint",
      figure: "fsyncs per tool round (strace)",
      unit: "calls",
      gateway: perRound,
      baseline: null,
      ratio: null,
      note: `2-round turns minus 1-round turns, ${turns} turns each; the commits (below) plus SQLite's WAL auto-checkpoint (two fsyncs every ~1,000 WAL pages)`,
    }),
    figure({
      scenario: "4 checkpoint",
      figure: "fsyncs per turn with one tool round (strace)",
      unit: "calls",
      gateway: perTurn,
      baseline: null,
      ratio: null,
    }),
    figure({
      scenario: "4 checkpoint",
      figure: "time inside one fsync, p50 (strace -T)",
      unit: "ms",
      gateway: percentile(durations, 50),
      baseline: null,
      ratio: null,
      note: `p99 ${percentile(durations, 99).toFixed(2)} ms`,
    }),
    ...commitFigures(one, two, turns, "strace'd gateway"),
  ];
}
