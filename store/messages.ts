import type { Knex } from "knex";
import { batches, toBuffer } from "./db.js";

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

/** Must run inside the immediate transaction that inserts, so no other writer can take the same seq
 * (docs/protocol/cursor-run.md §6.2). */
async function nextSeq(trx: Knex.Transaction, conversationId: string): Promise<number> {
  const row = (await trx("messages").max({ last: "seq" }).where("conversation_id", conversationId).first()) as
    | { last: number | null }
    | undefined;
  return (row?.last ?? 0) + 1;
}

/** Appends in order inside the caller's immediate transaction; returns the assigned seqs. */
export async function insertMessages(
  trx: Knex.Transaction,
  conversationId: string,
  runId: string,
  msgs: readonly NewMessage[],
): Promise<number[]> {
  const first = await nextSeq(trx, conversationId);
  const now = Date.now();
  const rows = msgs.map((m, i) => ({
    conversation_id: conversationId,
    seq: first + i,
    role: m.role,
    origin: m.origin,
    body: m.body,
    blob_id: m.blobId ? toBuffer(m.blobId) : null,
    tool_round_id: m.toolRoundId ?? null,
    run_id: runId,
    created_at: now,
  }));
  for (const batch of batches(rows)) await trx("messages").insert(batch);
  return rows.map((r) => r.seq);
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
 * and the
 * message commit together; a repeat (retry, resume, restart) gets the stored body back to replay, never a
 * re-rendered one.
 */
export async function appendRuntimeMessageOnce(
  db: Knex,
  conversationId: string,
  runId: string,
  eventId: string,
  body: string,
): Promise<{ body: string; appended: boolean }> {
  return db.transaction(async (trx) => {
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
