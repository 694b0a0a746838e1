import type { Knex } from "knex";

// The durable per-session event log (docs/protocol/aep.md §9.3): every event a client may not miss, as the envelope
// it was (or would have been) sent in, by seq, so a client re-attaching with its last seq gets what it missed.
// Bounded per session by size and age (aep.eventLog).

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("aep_events", (t) => {
    t.text("session_id").notNullable().references("session_id").inTable("aep_sessions").onDelete("CASCADE");
    t.integer("seq").notNullable();
    t.text("envelope").notNullable();
    t.integer("bytes").notNullable();
    t.bigInteger("created_at").notNullable();
    t.primary(["session_id", "seq"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("aep_events");
}
