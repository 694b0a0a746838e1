import type { Knex } from "knex";

export type RunStatus = "running" | "succeeded" | "failed" | "canceled";
export type TerminalRunStatus = Exclude<RunStatus, "running">;

/** Provider-reported token counts only (docs/protocol/README.md §6.6); absent when the provider did not report them. */
export interface RunUsage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

export interface NewRun {
  /** The request_id (docs/protocol/cursor-run.md §2.7): the wire run_id can repeat across distinct executions. */
  runId: string;
  conversationId: string;
  model: string;
}

export interface RunOutcome {
  status: TerminalRunStatus;
  error?: string;
  usage?: RunUsage;
}

export interface RunRecord {
  runId: string;
  conversationId: string;
  model: string;
  status: RunStatus;
  /** Zero-based index of the provider call in flight or last started; -1 before the first (docs/protocol/cursor-run.md
   * §6.5). */
  providerCallIndex: number;
  error?: string;
  usage: RunUsage;
  startedAt: number;
  endedAt?: number;
}

interface RunRow {
  run_id: string;
  conversation_id: string;
  model: string;
  status: RunStatus;
  provider_call_index: number;
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  error: string | null;
  started_at: number;
  ended_at: number | null;
}

const USAGE_COLUMNS = {
  inputTokens: "input_tokens",
  outputTokens: "output_tokens",
  cacheReadTokens: "cache_read_tokens",
  cacheWriteTokens: "cache_write_tokens",
  reasoningTokens: "reasoning_tokens",
} as const satisfies Record<keyof RunUsage, keyof RunRow>;

const USAGE_KEYS = Object.keys(USAGE_COLUMNS) as Array<keyof RunUsage>;

/** A reused request_id starts a new execution, so the row is reset rather than rejected. */
export async function createRun(db: Knex, r: NewRun): Promise<void> {
  const fresh = {
    conversation_id: r.conversationId,
    model: r.model,
    status: "running",
    provider_call_index: -1,
    ...Object.fromEntries(USAGE_KEYS.map((k) => [USAGE_COLUMNS[k], null])),
    error: null,
    started_at: Date.now(),
    ended_at: null,
  };
  await db("runs")
    .insert({ run_id: r.runId, ...fresh })
    .onConflict("run_id")
    .merge(fresh);
}

/** docs/protocol/cursor-run.md §6.5: written before the HTTP request, so a hang or crash still shows which call was in
 * flight. */
export async function setProviderCallIndex(db: Knex, runId: string, index: number): Promise<void> {
  const changed = await db("runs").where({ run_id: runId, status: "running" }).update({ provider_call_index: index });
  if (changed === 0) throw new Error(`setProviderCallIndex(${index}): run ${runId} is unknown or already terminal`);
}

/** docs/protocol/cursor-run.md §10.6: only the first terminal commit counts; returns whether this call made it. */
export async function finishRun(db: Knex, runId: string, outcome: RunOutcome): Promise<boolean> {
  const usage = outcome.usage ?? {};
  // The status guard sits in the UPDATE itself; a single statement takes the write lock before it reads.
  const changed = await db("runs")
    .where({ run_id: runId, status: "running" })
    .update({
      status: outcome.status,
      error: outcome.error ?? null,
      ...Object.fromEntries(USAGE_KEYS.map((k) => [USAGE_COLUMNS[k], usage[k] ?? null])),
      ended_at: Date.now(),
    });
  return changed > 0;
}

export async function getRun(db: Knex, runId: string): Promise<RunRecord | undefined> {
  const row: RunRow | undefined = await db("runs").where("run_id", runId).first();
  if (!row) return undefined;
  const usage: RunUsage = {};
  for (const k of USAGE_KEYS) {
    const v = row[USAGE_COLUMNS[k]];
    if (v !== null) usage[k] = v;
  }
  return {
    runId: row.run_id,
    conversationId: row.conversation_id,
    model: row.model,
    status: row.status,
    providerCallIndex: row.provider_call_index,
    ...(row.error === null ? {} : { error: row.error }),
    usage,
    startedAt: row.started_at,
    ...(row.ended_at === null ? {} : { endedAt: row.ended_at }),
  };
}
