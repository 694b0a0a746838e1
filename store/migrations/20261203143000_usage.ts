import type { Knex } from "knex";

// Token usage per front door, provider model and UTC day (docs/status-api.md): one row per key, counters added up as
// model calls report their usage. The row count grows with models × days only, never with calls.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("usage_daily", (t) => {
    t.text("front_door").notNullable();
    t.text("model").notNullable();
    t.text("day").notNullable(); // YYYY-MM-DD, UTC
    t.integer("calls").notNullable().defaultTo(0);
    t.bigInteger("input_tokens").notNullable().defaultTo(0);
    t.bigInteger("output_tokens").notNullable().defaultTo(0);
    t.bigInteger("cache_read_tokens").notNullable().defaultTo(0);
    t.bigInteger("cache_write_tokens").notNullable().defaultTo(0);
    t.primary(["front_door", "model", "day"]);
    t.index(["day"], "usage_daily_day_idx");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("usage_daily");
}
