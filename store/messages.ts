import type { Knex } from "knex";
import { batches, toBuffer } from "./db.js";
import { setProviderCallIndex } from "./runs.js";

/** Who produced a message, kept apart from its provider role (docs/protocol/cursor-run.md §8.6: a runtime tag has
 * role=user). */
export type MessageOrigin = "user" | "runtime" | "assistant" | "tool" | "system";

export interface NewMessage {
  role: string;
  /** A MessageOrigin; the schema rejects anything else. */
  origin: string;
  /** Canonical JSON, replayed byte-identical to providers (docs/protocol/README.md §6.4). */
  body: string;
  blobId?: Uint8Array;
  toolRoundId?: string;
}

export interface StoredMessage {
  seq: number;
  role: string;
  origin: string;
  body: string;
  toolRoundId?: string;
  runId: string;
}

interface MessageRow {
  seq: number;
  role: string;
  origin: string;
  body: string;
  tool_round_id: string | null;
  run_id: string;
}

const MESSAGE_COLUMNS = "role, origin, body, blob_id, tool_round_id";

/**
 * Appends in order inside the caller's immediate transaction (so no other writer can take the same seqs,
 * docs/protocol/cursor-run.md §6.2); returns the assigned seqs. The next seq is read in the INSERT itself: one
 * statement (one round trip to SQLite's thread) instead of a SELECT and an INSERT. SQLite evaluates the
 * uncorrelated MAX once and materializes the SELECT before inserting, so every row of a statement counts from it.
 */
export async function insertMessages(
  trx: Knex.Transaction,
  conversationId: string,
  runId: string,
  msgs: readonly NewMessage[],
): Promise<number[]> {
  const now = Date.now();
  const seqs: number[] = [];
  for (const batch of batches(msgs)) {
    const values = batch.map(() => "(?, ?, ?, ?, ?, ?)").join(", ");
    const bindings = batch.flatMap((m, i) => [
      i + 1,
      m.role,
      m.origin,
      m.body,
      m.blobId ? toBuffer(m.blobId) : null,
      m.toolRoundId ?? null,
    ]);
    const rows = (await trx.raw(
      `INSERT INTO messages (conversation_id, seq, ${MESSAGE_COLUMNS}, run_id, created_at)
       SELECT c.conversation_id, c.last + v.column1, v.column2, v.column3, v.column4, v.column5, v.column6,
              c.run_id, c.created_at
       FROM (SELECT ? AS conversation_id, (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?) AS last,
                    ? AS run_id, ? AS created_at) AS c,
            (VALUES ${values}) AS v
       RETURNING seq`,
      [conversationId, conversationId, runId, now, ...bindings],
    )) as Array<{ seq: number }>;
    seqs.push(...rows.map((r) => r.seq).sort((x, y) => x - y));
  }
  return seqs;
}

export async function appendMessages(
  db: Knex,
  conversationId: string,
  runId: string,
  msgs: readonly NewMessage[],
): Promise<number[]> {
  if (msgs.length === 0) return [];
  return db.transaction((trx) => insertMessages(trx, conversationId, runId, msgs));
}

/**
 * docs/protocol/cursor-run.md §8.6: a runtime event yields exactly one role=user, origin=runtime message. The event row
 * and the message commit together; a repeat (retry, resume, restart) gets the stored body back to replay, never a
 * re-rendered one. `providerCallIndex`: the run's next provider call, persisted in the same transaction (§6.5: before
 * its HTTP request; a run's first call needs no commit of its own).
 */
export async function appendRuntimeMessageOnce(
  db: Knex,
  conversationId: string,
  runId: string,
  eventId: string,
  body: string,
  providerCallIndex?: number,
): Promise<{ body: string; appended: boolean }> {
  return db.transaction(async (trx) => {
    if (providerCallIndex !== undefined) await setProviderCallIndex(trx, runId, providerCallIndex);
    const consumed: { body: string } | undefined = await trx("runtime_events as e")
      .join("messages as m", function () {
        this.on("m.conversation_id", "e.conversation_id").andOn("m.seq", "e.message_seq");
      })
      .select("m.body")
      .where({ "e.conversation_id": conversationId, "e.event_id": eventId })
      .first();
    if (consumed) return { body: consumed.body, appended: false };
    const [seq] = await insertMessages(trx, conversationId, runId, [{ role: "user", origin: "runtime", body }]);
    await trx("runtime_events").insert({
      conversation_id: conversationId,
      event_id: eventId,
      message_seq: seq,
      created_at: Date.now(),
    });
    return { body, appended: true };
  });
}

export async function loadMessages(db: Knex, conversationId: string): Promise<StoredMessage[]> {
  const rows: MessageRow[] = await db("messages")
    .select("seq", "role", "origin", "body", "tool_round_id", "run_id")
    .where("conversation_id", conversationId)
    .orderBy("seq");
  return rows.map((r) => ({
    seq: r.seq,
    role: r.role,
    origin: r.origin,
    body: r.body,
    ...(r.tool_round_id === null ? {} : { toolRoundId: r.tool_round_id }),
    runId: r.run_id,
  }));
}
