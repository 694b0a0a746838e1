import type { Knex } from "knex";

// The conversations this gateway has run, newest activity first, for the status page (docs/status-api.md §3).

export interface ConversationSummary {
  conversationId: string;
  /** Runs (executions) of the conversation this store recorded. */
  runs: number;
  /** Completed turns: final answers, i.e. assistant messages that asked for no tool round. */
  turns: number;
  /** The provider model of its latest run. */
  lastModel: string;
  lastActivityAt: number;
}

/** One page of conversations; `total` counts them all. */
export async function listConversations(
  db: Knex,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: ConversationSummary[] }> {
  const [{ total }] = (await db("runs").countDistinct({ total: "conversation_id" })) as Array<{ total: number }>;
  const rows = (await db("runs")
    .select("conversation_id")
    .count({ runs: "*" })
    .max({ last_at: "started_at" })
    .groupBy("conversation_id")
    .orderBy([{ column: "last_at", order: "desc" }, "conversation_id"])
    .limit(page.limit)
    .offset(page.offset)) as Array<{ conversation_id: string; runs: number; last_at: number }>;
  const ids = rows.map((r) => r.conversation_id);
  const turns = new Map<string, number>();
  const turnRows: Array<{ conversation_id: string; turns: number }> = await db("messages")
    .select("conversation_id")
    .count({ turns: "*" })
    .whereIn("conversation_id", ids)
    .andWhere("origin", "assistant")
    .whereNull("tool_round_id")
    .groupBy("conversation_id");
  for (const r of turnRows) turns.set(r.conversation_id, Number(r.turns));
  const latest = new Map<string, string>();
  const modelRows: Array<{ conversation_id: string; model: string }> = await db("runs as r")
    .select("r.conversation_id", "r.model")
    .whereIn("r.conversation_id", ids)
    .andWhere("r.started_at", db.raw("(select max(started_at) from runs where conversation_id = r.conversation_id)"));
  for (const r of modelRows) latest.set(r.conversation_id, r.model);
  return {
    total: Number(total),
    items: rows.map((r) => ({
      conversationId: r.conversation_id,
      runs: Number(r.runs),
      turns: turns.get(r.conversation_id) ?? 0,
      lastModel: latest.get(r.conversation_id) ?? "",
      lastActivityAt: Number(r.last_at),
    })),
  };
}
