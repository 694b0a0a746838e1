import type { Knex } from "knex";

// A session belongs to the token that opened it (docs/protocol/aep.md §9.1): its digest, never the token itself.
// Sessions stored before this migration have none and are bound by the next authenticated attach.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("aep_sessions", (t) => {
    t.text("owner").nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("aep_sessions", (t) => {
    t.dropColumn("owner");
  });
}
