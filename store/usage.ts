import type { Knex } from "knex";

// Token usage per front door, model and UTC day (docs/status-api.md §4). Any front door records into the same
// table: the Cursor agent loop and the Anthropic Messages endpoint both meter each model call as it reports usage.

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

/** Adds one call to its (front door, model, day) row: a single upsert, so concurrent calls never lose a count. */
export async function recordUsage(db: Knex, r: UsageRecord): Promise<void> {
  const counters = Object.entries(COUNTERS).map(([field, column]) => [column, r[field as keyof typeof COUNTERS]]);
  const increments = Object.values(COUNTERS).map((column) => [column, db.raw(`${column} + excluded.${column}`)]);
  await db("usage_daily")
    .insert({ front_door: r.frontDoor, model: r.model, day: r.day, calls: 1, ...Object.fromEntries(counters) })
    .onConflict(["front_door", "model", "day"])
    .merge({ calls: db.raw("calls + 1"), ...Object.fromEntries(increments) });
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
