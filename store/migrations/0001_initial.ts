import type { Knex } from "knex";

// Schema of docs/protocol/cursor-run.md §6.1 (blob graph + heads), docs/protocol/cursor-run.md §8.6 (runtime events),
// docs/protocol/cursor-run.md §6.5 (runs.provider_call_index). Timestamps are Unix milliseconds.

const MESSAGE_ORIGINS = ["user", "runtime", "assistant", "tool", "system"];
const RUN_STATUSES = ["running", "succeeded", "failed", "canceled"];

/** Blob-keyed tables are clustered on their key in SQLite; knex has no table-options hook for that. */
async function createWithoutRowid(knex: Knex, table: string, build: (t: Knex.CreateTableBuilder) => void) {
  const builder = knex.schema.createTable(table, build);
  if (knex.client.dialect !== "sqlite3") {
    await builder;
    return;
  }
  const [create, ...rest] = builder.toSQL();
  await knex.raw(`${create.sql} WITHOUT ROWID`);
  for (const stmt of rest) await knex.raw(stmt.sql, stmt.bindings);
}

export async function up(knex: Knex): Promise<void> {
  await createWithoutRowid(knex, "blobs", (t) => {
    t.binary("id").notNullable().primary().checkLength("=", 32);
    // The blob's own decoded type, when known (docs/protocol/cursor-run.md §6.1: it may be opaque).
    t.integer("kind").nullable();
    t.binary("data").notNullable();
    t.integer("size_bytes").notNullable();
    t.bigInteger("created_at").notNullable();
  });

  await createWithoutRowid(knex, "blob_edges", (t) => {
    t.binary("parent_id").notNullable().references("id").inTable("blobs");
    t.binary("child_id").notNullable().references("id").inTable("blobs");
    t.integer("kind").notNullable(); // the reference's meaning inside the parent, e.g. TurnStep
    t.integer("ordinal").notNullable().defaultTo(0); // array index inside the parent, e.g. steps[17]
    t.primary(["parent_id", "kind", "ordinal"]);
    t.index(["child_id"], "blob_edges_child_idx");
  });

  await knex.schema.createTable("conversation_heads", (t) => {
    t.text("conversation_id").notNullable().primary();
    t.binary("checkpoint_id").notNullable().references("id").inTable("blobs");
    t.integer("revision").notNullable();
    t.bigInteger("updated_at").notNullable();
  });

  await knex.schema.createTable("runs", (t) => {
    // The request_id of the RunSSE/BidiAppend pair; the wire run_id can repeat across executions
    // (docs/protocol/cursor-run.md §2.7).
    t.text("run_id").notNullable().primary();
    t.text("conversation_id").notNullable().index("runs_conversation_idx");
    t.text("model").notNullable();
    t.text("status").notNullable().checkIn(RUN_STATUSES);
    t.integer("provider_call_index").notNullable().defaultTo(-1);
    t.integer("input_tokens").nullable();
    t.integer("output_tokens").nullable();
    t.integer("cache_read_tokens").nullable();
    t.integer("cache_write_tokens").nullable();
    t.integer("reasoning_tokens").nullable();
    t.text("error").nullable();
    t.bigInteger("started_at").notNullable();
    t.bigInteger("ended_at").nullable();
  });

  // Canonical, append-only transcript (docs/protocol/cursor-run.md §8.6). blob_id has no foreign key: the message is
  // the fact source and its client-facing blob may only be built later, at checkpoint time.
  await knex.schema.createTable("messages", (t) => {
    t.text("conversation_id").notNullable();
    t.integer("seq").notNullable();
    t.text("role").notNullable();
    t.text("origin").notNullable().checkIn(MESSAGE_ORIGINS);
    t.text("body").notNullable();
    t.binary("blob_id").nullable();
    t.text("tool_round_id").nullable();
    t.text("run_id").notNullable();
    t.bigInteger("created_at").notNullable();
    t.primary(["conversation_id", "seq"]);
  });

  // One row per consumed runtime event; its key makes the runtime message exactly-once (docs/protocol/cursor-run.md
  // §8.6).
  await knex.schema.createTable("runtime_events", (t) => {
    t.text("conversation_id").notNullable();
    t.text("event_id").notNullable();
    t.integer("message_seq").notNullable();
    t.bigInteger("created_at").notNullable();
    t.primary(["conversation_id", "event_id"]);
    t.foreign(["conversation_id", "message_seq"]).references(["conversation_id", "seq"]).inTable("messages");
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ["runtime_events", "messages", "runs", "conversation_heads", "blob_edges", "blobs"]) {
    await knex.schema.dropTable(table);
  }
}
