import type { Knex } from "knex";
import type { BlobEdge, BlobPut } from "../cursor/blob-graph.js";
import { insertBlobs, insertEdges, verifyBlobs } from "./blobs.js";
import { toBuffer, toBytes } from "./db.js";
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
export async function commitCheckpoint(db: Knex, c: CheckpointCommit): Promise<{ revision: number }> {
  verifyBlobs(c.blobs);
  const now = Date.now();
  return db.transaction(async (trx) => {
    if (c.stillCurrent && !c.stillCurrent()) throw new StaleCheckpointError(c.conversationId);
    if (c.messages?.rows.length) await insertMessages(trx, c.conversationId, c.messages.runId, c.messages.rows);
    await insertBlobs(trx, c.blobs, now);
    await insertEdges(trx, c.edges);
    const checkpointId = toBuffer(c.checkpointId);
    const [head]: Array<{ revision: number }> = await trx("conversation_heads")
      .insert({ conversation_id: c.conversationId, checkpoint_id: checkpointId, revision: 1, updated_at: now })
      .onConflict("conversation_id")
      .merge({
        checkpoint_id: checkpointId,
        revision: trx.raw("?? + 1", ["conversation_heads.revision"]),
        updated_at: now,
      })
      .returning("revision");
    if (c.providerCallIndex) await setProviderCallIndex(trx, c.providerCallIndex.runId, c.providerCallIndex.index);
    if (c.usage?.length) await addUsage(trx, c.usage);
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
