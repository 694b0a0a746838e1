import type { Knex } from "knex";
import type { WriteTx } from "./db.js";

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

const USAGE_COLUMN_LIST = USAGE_KEYS.map((k) => USAGE_COLUMNS[k]);

// A reused request_id starts a new execution, so the row is reset rather than rejected.
const RESET_COLUMNS = [
  "conversation_id",
  "model",
  "status",
  "provider_call_index",
  ...USAGE_COLUMN_LIST,
  "error",
  "started_at",
  "ended_at",
];
const CREATE_RUN = `INSERT INTO runs (run_id, ${RESET_COLUMNS.join(", ")})
  VALUES (?, ?, ?, 'running', -1, ${USAGE_COLUMN_LIST.map(() => "NULL, ").join("")}NULL, ?, NULL)
  ON CONFLICT (run_id) DO UPDATE SET ${RESET_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ")}`;

const SET_CALL_INDEX = "UPDATE runs SET provider_call_index = ? WHERE run_id = ? AND status = 'running'";

// The status guard sits in the UPDATE itself: only the first terminal commit changes the row.
const FINISH_RUN = `UPDATE runs SET status = ?, error = ?, ${USAGE_COLUMN_LIST.map((c) => `${c} = ?`).join(", ")},
  ended_at = ? WHERE run_id = ? AND status = 'running'`;

export function createRun(tx: WriteTx, r: NewRun): void {
  tx.run(CREATE_RUN, r.runId, r.conversationId, r.model, Date.now());
}

/** docs/protocol/cursor-run.md §6.5: written before the HTTP request, so a hang or crash still shows which call was in
 * flight. */
export function setProviderCallIndex(tx: WriteTx, runId: string, index: number): void {
  const { changes } = tx.run(SET_CALL_INDEX, index, runId);
  if (changes === 0) throw new Error(`setProviderCallIndex(${index}): run ${runId} is unknown or already terminal`);
}

/** docs/protocol/cursor-run.md §10.6: only the first terminal commit counts; returns whether this call made it. */
export function finishRun(tx: WriteTx, runId: string, outcome: RunOutcome): boolean {
  const usage = outcome.usage ?? {};
  const counts = USAGE_KEYS.map((k) => usage[k] ?? null);
  return tx.run(FINISH_RUN, outcome.status, outcome.error ?? null, ...counts, Date.now(), runId).changes > 0;
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
