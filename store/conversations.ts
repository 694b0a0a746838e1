import type { Knex } from "knex";
import type { BlobEdge, BlobPut } from "../cursor/blob-graph.js";
import { insertBlobs, insertEdges, verifyBlobs } from "./blobs.js";
import { toBuffer, toBytes, type Writer } from "./db.js";
import { insertMessages, type NewMessage } from "./messages.js";
import { setProviderCallIndex } from "./runs.js";
import { addUsage, type UsageTotals } from "./usage.js";

export interface CheckpointCommit {
  conversationId: string;
  checkpointId: Uint8Array;
  blobs: BlobPut[];
  edges: BlobEdge[];
  /**
   * Asked inside the transaction, once it holds the write lock: false aborts the commit. A run superseded by a
   * newer run of the conversation uses it so that its late commit can never move the head (docs/protocol/cursor-run.md
   * §7.1).
   */
  stillCurrent?: () => boolean;
  /** Canonical messages the checkpoint makes visible (a staged round's assistant batch, a final answer). */
  messages?: { runId: string; rows: NewMessage[] };
  /** The provider call the checkpoint lets the run start next (docs/protocol/cursor-run.md §6.5: persisted before its
   * HTTP request). */
  providerCallIndex?: { runId: string; index: number };
  /** Usage totals to add in the same transaction (docs/status-api.md §4): metering costs no commit of its own. */
  usage?: readonly UsageTotals[];
}

export class StaleCheckpointError extends Error {
  constructor(conversationId: string) {
    super(`checkpoint of conversation ${conversationId} not committed: a newer run took over`);
    this.name = "StaleCheckpointError";
  }
}

export interface ConversationHead {
  checkpointId: Uint8Array;
  revision: number;
}

/**
 * docs/protocol/cursor-run.md §6.2–§6.3: children first, head last, all in one immediate transaction — a crash leaves
 * at most unreachable
 * blobs, never a head pointing at a missing object (the foreign keys reject that and roll everything back). The
 * messages and the provider call index that go with the checkpoint commit in the same transaction: one fsync.
 */
const SWITCH_HEAD = `INSERT INTO conversation_heads (conversation_id, checkpoint_id, revision, updated_at)
  VALUES (?, ?, 1, ?)
  ON CONFLICT (conversation_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, revision = revision + 1,
  updated_at = excluded.updated_at
  RETURNING revision`;

export async function commitCheckpoint(write: Writer, c: CheckpointCommit): Promise<{ revision: number }> {
  verifyBlobs(c.blobs);
  const now = Date.now();
  return write((tx) => {
    if (c.stillCurrent && !c.stillCurrent()) throw new StaleCheckpointError(c.conversationId);
    if (c.messages?.rows.length) insertMessages(tx, c.conversationId, c.messages.runId, c.messages.rows);
    insertBlobs(tx, c.blobs, now);
    insertEdges(tx, c.edges);
    const head = tx.get<{ revision: number }>(SWITCH_HEAD, c.conversationId, toBuffer(c.checkpointId), now)!;
    if (c.providerCallIndex) setProviderCallIndex(tx, c.providerCallIndex.runId, c.providerCallIndex.index);
    if (c.usage?.length) addUsage(tx, c.usage);
    return { revision: head.revision };
  });
}

export async function getHead(db: Knex, conversationId: string): Promise<ConversationHead | undefined> {
  const row: { checkpoint_id: Buffer; revision: number } | undefined = await db("conversation_heads")
    .select("checkpoint_id", "revision")
    .where("conversation_id", conversationId)
    .first();
  return row && { checkpointId: toBytes(row.checkpoint_id), revision: row.revision };
}
