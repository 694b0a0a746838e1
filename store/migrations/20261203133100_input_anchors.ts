import type { Knex } from "knex";

// Input anchors (docs/protocol/cursor-run.md §12.1): the first time a conversation sees a user message id, the
// checkpoint the message was sent on is kept, so a later edit of that message (same id, new content) is built on it.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("input_anchors", (t) => {
    t.text("conversation_id").notNullable();
    t.text("message_id").notNullable();
    // The encoded ConversationStateStructure the message was first sent with (the revision before it).
    t.binary("base_state").notNullable();
    t.bigInteger("created_at").notNullable();
    t.primary(["conversation_id", "message_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("input_anchors");
}
