// The route of each conversation's last run: "local" (this gateway) or "upstream" (Cursor's backend), and the
// model id it named ("" for a run that came with credentials instead; the credentials themselves are never kept).
import type { Knex } from "knex";
import type { WriteTx } from "./db.js";

export interface ConversationRoute {
  route: "local" | "upstream";
  modelId: string;
}

export async function getConversationRoute(db: Knex, conversationId: string): Promise<ConversationRoute | undefined> {
  const row: { route: ConversationRoute["route"]; model_id: string } | undefined = await db("conversation_routes")
    .select("route", "model_id")
    .where("conversation_id", conversationId)
    .first();
  return row && { route: row.route, modelId: row.model_id };
}

const SET_ROUTE = `INSERT INTO conversation_routes (conversation_id, route, model_id, updated_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (conversation_id) DO UPDATE SET route = excluded.route, model_id = excluded.model_id,
  updated_at = excluded.updated_at`;

export function setConversationRoute(tx: WriteTx, conversationId: string, last: ConversationRoute): void {
  tx.run(SET_ROUTE, conversationId, last.route, last.modelId, Date.now());
}
