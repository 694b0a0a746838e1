// The route of each conversation's last run: "local" (this gateway) or "upstream" (Cursor's backend), and the
// model id it named ("" for a run that came with credentials instead; the credentials themselves are never kept).
import type { Knex } from "knex";

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

export async function setConversationRoute(db: Knex, conversationId: string, last: ConversationRoute): Promise<void> {
  await db("conversation_routes")
    .insert({ conversation_id: conversationId, route: last.route, model_id: last.modelId, updated_at: Date.now() })
    .onConflict("conversation_id")
    .merge();
}
