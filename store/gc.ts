// Blob garbage collection by mark and sweep (docs/protocol/cursor-run.md §6.6): blobs are shared between checkpoints,
// branches and subagents, so reference counts would lie. Roots are the conversation heads, every root prompt, turn and
// to-do a head's checkpoint lists, and the blobs canonical messages name; everything reachable from them over blob_edges is
// live. A head's checkpoint lists roots and turns that earlier snapshots wrote, and its edges name only the new ones, so
// the head itself is read for them. A blob still unreachable after the retention period is deleted with its outgoing
// edges; the period covers runs in flight, whose new blobs are not yet under a head. A blob kept for its age is a root
// too: what it points at stays (an abandoned branch written recently may point at old turns no head reaches any more,
// and deleting them would break its edges).
import { fromBinary } from "@bufbuild/protobuf";
import type { Knex } from "knex";
import { ConversationStateStructureSchema } from "../proto/gen/agent/v1/agent_pb.js";
import { batches, toBuffer } from "./db.js";

export interface GcResult {
  deletedBlobs: number;
  deletedBytes: number;
}

export async function collectBlobs(db: Knex, createdBefore: number): Promise<GcResult> {
  return db.transaction(async (tx) => {
    await tx.raw("DROP TABLE IF EXISTS temp.gc_head_refs");
    await tx.raw("CREATE TEMP TABLE gc_head_refs (id BLOB PRIMARY KEY) WITHOUT ROWID");
    await markHeadReferences(tx);
    await tx.raw("DROP TABLE IF EXISTS temp.gc_dead");
    await tx.raw(
      `CREATE TEMP TABLE gc_dead AS
       WITH RECURSIVE live(id) AS (
         SELECT checkpoint_id FROM conversation_heads
         UNION SELECT id FROM temp.gc_head_refs
         UNION SELECT blob_id FROM messages WHERE blob_id IS NOT NULL
         UNION SELECT id FROM blobs WHERE created_at >= ?
         UNION SELECT e.child_id FROM blob_edges e JOIN live ON e.parent_id = live.id
       )
       SELECT id, size_bytes FROM blobs WHERE created_at < ? AND id NOT IN (SELECT id FROM live)`,
      [createdBefore, createdBefore],
    );
    const [totals] = (await tx.raw(
      "SELECT COUNT(*) AS n, COALESCE(SUM(size_bytes), 0) AS bytes FROM temp.gc_dead",
    )) as Array<{ n: number; bytes: number }>;
    // A dead blob's children may be live; only its own outgoing edges go. No live blob points at a dead one.
    await tx.raw("DELETE FROM blob_edges WHERE parent_id IN (SELECT id FROM temp.gc_dead)");
    await tx.raw("DELETE FROM blobs WHERE id IN (SELECT id FROM temp.gc_dead)");
    await tx.raw("DROP TABLE temp.gc_dead");
    await tx.raw("DROP TABLE temp.gc_head_refs");
    return { deletedBlobs: Number(totals?.n ?? 0), deletedBytes: Number(totals?.bytes ?? 0) };
  });
}

/** Every root prompt, turn and to-do id the heads' checkpoints list, whichever snapshot first wrote it. */
async function markHeadReferences(tx: Knex.Transaction): Promise<void> {
  const heads: Array<{ data: Buffer }> = await tx("conversation_heads as h")
    .join("blobs as b", "b.id", "h.checkpoint_id")
    .select("b.data");
  for (const { data } of heads) {
    const ids = referencedIds(data);
    for (const batch of batches(ids)) {
      await tx("gc_head_refs")
        .insert(batch.map((id) => ({ id: toBuffer(id) })))
        .onConflict("id")
        .ignore();
    }
  }
}

function referencedIds(data: Uint8Array): Uint8Array[] {
  try {
    const state = fromBinary(ConversationStateStructureSchema, data);
    return [...state.rootPromptMessagesJson, ...state.turns, ...state.todos];
  } catch {
    // A head that is not a checkpoint this gateway can read keeps what its edges reach, and no more.
    return [];
  }
}
