import type { Knex } from "knex";

export type AepSessionState = "created" | "idle" | "running" | "terminated";

export interface AepSessionRecord {
  sessionId: string;
  sessionKey?: string;
  worker: string;
  workdir: string;
  workerSessionId: string;
  workerStarted: boolean;
  state: AepSessionState;
  lastSeq: number;
  /** The digest of the token that opened it; only that token attaches to it again. */
  owner?: string;
}

export type AepSessionUpdate = Partial<
  Pick<AepSessionRecord, "workdir" | "workerSessionId" | "workerStarted" | "state" | "lastSeq" | "owner">
>;

interface Row {
  session_id: string;
  session_key: string | null;
  worker: string;
  workdir: string;
  worker_session_id: string;
  worker_started: number | boolean;
  state: AepSessionState;
  last_seq: number;
  owner: string | null;
}

const fromRow = (r: Row): AepSessionRecord => ({
  sessionId: r.session_id,
  ...(r.session_key === null ? {} : { sessionKey: r.session_key }),
  worker: r.worker,
  workdir: r.workdir,
  workerSessionId: r.worker_session_id,
  workerStarted: Boolean(r.worker_started),
  state: r.state,
  lastSeq: r.last_seq,
  ...(r.owner === null ? {} : { owner: r.owner }),
});

export async function createAepSession(db: Knex, s: AepSessionRecord): Promise<void> {
  const now = Date.now();
  await db("aep_sessions").insert({
    session_id: s.sessionId,
    session_key: s.sessionKey ?? null,
    worker: s.worker,
    workdir: s.workdir,
    worker_session_id: s.workerSessionId,
    worker_started: s.workerStarted,
    state: s.state,
    last_seq: s.lastSeq,
    owner: s.owner ?? null,
    created_at: now,
    updated_at: now,
  });
}

export async function findAepSessionByKey(db: Knex, sessionKey: string): Promise<AepSessionRecord | undefined> {
  const row: Row | undefined = await db("aep_sessions").where("session_key", sessionKey).first();
  return row && fromRow(row);
}

export async function getAepSession(db: Knex, sessionId: string): Promise<AepSessionRecord | undefined> {
  const row: Row | undefined = await db("aep_sessions").where("session_id", sessionId).first();
  return row && fromRow(row);
}

const COLUMNS = {
  workdir: "workdir",
  workerSessionId: "worker_session_id",
  workerStarted: "worker_started",
  state: "state",
  lastSeq: "last_seq",
  owner: "owner",
} as const;

export async function updateAepSession(db: Knex, sessionId: string, update: AepSessionUpdate): Promise<void> {
  const set: Record<string, unknown> = { updated_at: Date.now() };
  for (const [key, column] of Object.entries(COLUMNS)) {
    const value = update[key as keyof AepSessionUpdate];
    if (value !== undefined) set[column] = value;
  }
  await db("aep_sessions").where("session_id", sessionId).update(set);
}

export async function deleteAepSession(db: Knex, sessionId: string): Promise<void> {
  await db("aep_sessions").where("session_id", sessionId).delete();
}

/** After a gateway restart no worker runs: a session left running is idle (its open input is settled by the ledger). */
export async function settleAepSessionsAfterRestart(db: Knex): Promise<void> {
  await db("aep_sessions").where("state", "running").update({ state: "idle", updated_at: Date.now() });
}
