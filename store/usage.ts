import type { Knex } from "knex";
import type { WriteTx } from "./db.js";

// Token usage per front door, model and UTC day (docs/status-api.md §4). Any front door records into the same
// table: the engine's usage ledger (engine/usage-meter.ts) adds up each model call's report and writes the totals.

/** One model call's provider-reported counts. `input` includes the prompt-cache reads, as every adapter reports it. */
export interface UsageRecord {
  /** Which door the call came through, e.g. "cursor" or "messages". */
  frontDoor: string;
  /** The provider's model name. */
  model: string;
  /** YYYY-MM-DD (UTC). */
  day: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface UsageTotals extends UsageRecord {
  calls: number;
}

interface UsageRow {
  front_door: string;
  model: string;
  day: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
}

const COUNTERS = {
  input: "input_tokens",
  output: "output_tokens",
  cacheRead: "cache_read_tokens",
  cacheWrite: "cache_write_tokens",
} as const;

/** The UTC day of a moment, as the table keys it. */
export function usageDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

const COUNTER_FIELDS = Object.keys(COUNTERS) as Array<keyof typeof COUNTERS>;
const COUNTER_COLUMNS = ["calls", ...COUNTER_FIELDS.map((f) => COUNTERS[f])];
const ADD_USAGE = `INSERT INTO usage_daily (front_door, model, day, ${COUNTER_COLUMNS.join(", ")})
  VALUES (?, ?, ?, ${COUNTER_COLUMNS.map(() => "?").join(", ")})
  ON CONFLICT (front_door, model, day)
  DO UPDATE SET ${COUNTER_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`;

/**
 * Adds totals to their (front door, model, day) rows, one upsert each, inside the caller's transaction: usage rides
 * in a commit the gateway makes anyway (a run's checkpoint) instead of costing an fsync of its own.
 */
export function addUsage(tx: WriteTx, rows: readonly UsageTotals[]): void {
  for (const r of rows) {
    tx.run(ADD_USAGE, r.frontDoor, r.model, r.day, r.calls, ...COUNTER_FIELDS.map((f) => r[f]));
  }
}

/** Rows of the days from `sinceDay` on, newest day first; at most `limit` rows. */
export async function usageSince(db: Knex, sinceDay: string, limit: number): Promise<UsageTotals[]> {
  const rows: UsageRow[] = await db("usage_daily")
    .where("day", ">=", sinceDay)
    .orderBy([{ column: "day", order: "desc" }, "front_door", "model"])
    .limit(limit);
  return rows.map((row) => ({
    frontDoor: row.front_door,
    model: row.model,
    day: row.day,
    calls: row.calls,
    input: row.input_tokens,
    output: row.output_tokens,
    cacheRead: row.cache_read_tokens,
    cacheWrite: row.cache_write_tokens,
  }));
}
