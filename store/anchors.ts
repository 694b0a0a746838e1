// Input anchors (docs/protocol/cursor-run.md §12.1): a user message id is bound, the first time a conversation sees
// it, to the checkpoint it was sent on. Persisted, because an edit may come after a restart.
import type { Knex } from "knex";
import { toBuffer, toBytes } from "./db.js";

/**
 * Records `baseState` as the anchor of the message unless it has one, and returns the anchor: the state given now for
 * a new message, the first one for a message seen before (an edit or a repeat). Runs inside the run's first
 * transaction (store/run-start.ts). One statement: a conflict keeps the stored state (the no-op update only lets
 * RETURNING hand it back).
 */
export async function recordAnchor(
  trx: Knex.Transaction,
  conversationId: string,
  input: { messageId: string; baseState: Uint8Array },
): Promise<Uint8Array> {
  const [row]: Array<{ base_state: Buffer }> = await trx("input_anchors")
    .insert({
      conversation_id: conversationId,
      message_id: input.messageId,
      base_state: toBuffer(input.baseState),
      created_at: Date.now(),
    })
    .onConflict(["conversation_id", "message_id"])
    .merge({ base_state: trx.raw("??", ["input_anchors.base_state"]) })
    .returning("base_state");
  return toBytes(row!.base_state);
}
