// Shared by the fuzz properties: how many runs (CI-sized in npm test, FUZZ_RUNS for `npm run fuzz`), the fixed seed,
// the printed counts, and the process checks (alive, healthy, RSS back near its baseline).
import { readFileSync } from "node:fs";

/** Runs per property: the CI size unless FUZZ_RUNS asks for more. */
export function runs(ciRuns: number): number {
  const asked = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(asked) && asked > 0 ? asked : ciRuns;
}

/** Fixed, so a failure in CI replays; FUZZ_SEED explores other corners. */
export const SEED = Number(process.env.FUZZ_SEED ?? 20261203);

/** Every name a plain object answers to without owning it. */
export const PROTOTYPE_NAMES = [...Object.getOwnPropertyNames(Object.prototype), "__proto__"];

/** Counts answers by kind and prints them once, so a run shows what it covered. */
export class Tally {
  private readonly counts = new Map<string, number>();
  constructor(private readonly name: string) {}
  add(kind: string): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }
  total(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }
  print(): void {
    const parts = [...this.counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}=${n}`);
    console.log(`      ${this.name}: ${this.total()} (seed ${SEED}): ${parts.join(" ")}`);
  }
}

export function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  if (!line) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(line.split(/\s+/)[1]) * 1024;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded) for RSS to come back within `slack` of the baseline; returns the last reading. */
export async function settledRss(pid: number, baseline: number, slack: number, waitMs = 10_000): Promise<number> {
  const until = Date.now() + waitMs;
  let rss = rssBytes(pid);
  while (rss > baseline + slack && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    rss = rssBytes(pid);
  }
  return rss;
}

const CONNECT_CODES = new Set([
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
]);

export function isConnectCode(code: unknown): boolean {
  return typeof code === "string" && CONNECT_CODES.has(code);
}

export const MiB = 1024 * 1024;
