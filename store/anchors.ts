// Input anchors (docs/protocol/cursor-run.md §12.1): a user message id is bound, the first time a conversation sees
// it, to the checkpoint it was sent on. Persisted, because an edit may come after a restart.
import { toBuffer, toBytes, type WriteTx } from "./db.js";

// A conflict keeps the stored state; the no-op update only lets RETURNING hand it back.
const RECORD_ANCHOR = `INSERT INTO input_anchors (conversation_id, message_id, base_state, created_at)
  VALUES (?, ?, ?, ?)
  ON CONFLICT (conversation_id, message_id) DO UPDATE SET base_state = input_anchors.base_state
  RETURNING base_state`;

/**
 * Records `baseState` as the anchor of the message unless it has one, and returns the anchor: the state given now for
 * a new message, the first one for a message seen before (an edit or a repeat). Runs inside the run's first
 * transaction (store/run-start.ts).
 */
export function recordAnchor(
  tx: WriteTx,
  conversationId: string,
  input: { messageId: string; baseState: Uint8Array },
): Uint8Array {
  const row = tx.get<{ base_state: Buffer }>(
    RECORD_ANCHOR,
    conversationId,
    input.messageId,
    toBuffer(input.baseState),
    Date.now(),
  );
  return toBytes(row!.base_state);
}
