import type { Knex } from "knex";

// Which side served a conversation's last run and for which configured model id (docs/protocol/cursor-transport.md
// §8.1): a later run_request that names no model continues there, also after a restart. No credentials are kept.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("conversation_routes", (t) => {
    t.text("conversation_id").notNullable().primary();
    t.text("route").notNullable().checkIn(["local", "upstream"]);
    t.text("model_id").notNullable();
    t.bigInteger("updated_at").notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("conversation_routes");
}
