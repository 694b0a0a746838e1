// The AEP event log (docs/protocol/aep.md §9.3): envelopes by (session, seq), appended in seq order, read back
// after a seq, and pruned per session to a byte budget and an age.
import type { Knex } from "knex";

/** What a session's log may hold: the newest events within `maxBytes`, none older than `maxAgeMs`. */
export interface EventLogBounds {
  maxBytes: number;
  maxAgeMs: number;
}

export interface LoggedEvent {
  seq: number;
  /** The envelope as JSON text, exactly as it went (or would have gone) to the socket. */
  envelope: string;
}

/** Rows per insert statement (SQLite's bound-variable limit is 32766; 4 per row). */
const INSERT_CHUNK = 500;

export async function appendAepEvents(db: Knex, sessionId: string, events: readonly LoggedEvent[]): Promise<void> {
  const now = Date.now();
  const rows = events.map((e) => ({
    session_id: sessionId,
    seq: e.seq,
    envelope: e.envelope,
    bytes: Buffer.byteLength(e.envelope),
    created_at: now,
  }));
  for (let i = 0; i < rows.length; i += INSERT_CHUNK)
    await db("aep_events")
      .insert(rows.slice(i, i + INSERT_CHUNK))
      .onConflict(["session_id", "seq"])
      .ignore();
}

/** Events after `afterSeq`, in seq order, at most `limit`. */
export async function aepEventsAfter(
  db: Knex,
  sessionId: string,
  afterSeq: number,
  limit: number,
): Promise<LoggedEvent[]> {
  return db("aep_events")
    .select("seq", "envelope")
    .where("session_id", sessionId)
    .andWhere("seq", ">", afterSeq)
    .orderBy("seq")
    .limit(limit);
}

/** Drops what is too old, then the oldest events beyond the byte budget. */
export async function pruneAepEvents(db: Knex, sessionId: string, bounds: EventLogBounds): Promise<void> {
  await db("aep_events")
    .where("session_id", sessionId)
    .andWhere("created_at", "<", Date.now() - bounds.maxAgeMs)
    .delete();
  // The newest seq whose running total (newest first) still fits: everything below it goes.
  const cut = await db.raw(
    `SELECT seq FROM (SELECT seq, SUM(bytes) OVER (ORDER BY seq DESC) AS total FROM aep_events WHERE session_id = ?)
     WHERE total > ? ORDER BY seq DESC LIMIT 1`,
    [sessionId, bounds.maxBytes],
  );
  const first = (cut as Array<{ seq: number }>)[0];
  if (first) await db("aep_events").where("session_id", sessionId).andWhere("seq", "<=", first.seq).delete();
}
