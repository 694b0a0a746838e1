import type { Knex } from "knex";
import { toBuffer, type WriteTx, type Writer } from "./db.js";
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

// The next seq is read in the INSERT itself: inside the immediate transaction no other writer can take it
// (docs/protocol/cursor-run.md §6.2).
const INSERT_MESSAGE = `INSERT INTO messages
  (conversation_id, seq, role, origin, body, blob_id, tool_round_id, run_id, created_at)
  VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?), ?, ?, ?, ?, ?, ?, ?)
  RETURNING seq`;

const CONSUMED_EVENT = `SELECT m.body FROM runtime_events e
  JOIN messages m ON m.conversation_id = e.conversation_id AND m.seq = e.message_seq
  WHERE e.conversation_id = ? AND e.event_id = ?`;

const INSERT_EVENT =
  "INSERT INTO runtime_events (conversation_id, event_id, message_seq, created_at) VALUES (?, ?, ?, ?)";

/** Appends in order inside the caller's transaction; returns the assigned seqs. */
export function insertMessages(
  tx: WriteTx,
  conversationId: string,
  runId: string,
  msgs: readonly NewMessage[],
): number[] {
  const now = Date.now();
  return msgs.map(
    (m) =>
      tx.get<{ seq: number }>(
        INSERT_MESSAGE,
        conversationId,
        conversationId,
        m.role,
        m.origin,
        m.body,
        m.blobId ? toBuffer(m.blobId) : null,
        m.toolRoundId ?? null,
        runId,
        now,
      )!.seq,
  );
}

export async function appendMessages(
  write: Writer,
  conversationId: string,
  runId: string,
  msgs: readonly NewMessage[],
): Promise<number[]> {
  if (msgs.length === 0) return [];
  return write((tx) => insertMessages(tx, conversationId, runId, msgs));
}

/**
 * docs/protocol/cursor-run.md §8.6: a runtime event yields exactly one role=user, origin=runtime message. The event row
 * and the message commit together; a repeat (retry, resume, restart) gets the stored body back to replay, never a
 * re-rendered one. `providerCallIndex`: the run's next provider call, persisted in the same transaction (§6.5: before
 * its HTTP request; a run's first call needs no commit of its own).
 */
export function appendRuntimeMessageOnce(
  write: Writer,
  conversationId: string,
  runId: string,
  eventId: string,
  body: string,
  providerCallIndex?: number,
): Promise<{ body: string; appended: boolean }> {
  return write((tx) => {
    if (providerCallIndex !== undefined) setProviderCallIndex(tx, runId, providerCallIndex);
    const consumed = tx.get<{ body: string }>(CONSUMED_EVENT, conversationId, eventId);
    if (consumed) return { body: consumed.body, appended: false };
    const [seq] = insertMessages(tx, conversationId, runId, [{ role: "user", origin: "runtime", body }]);
    tx.run(INSERT_EVENT, conversationId, eventId, seq, Date.now());
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
