import type { Knex } from "knex";

// AEP v1 sessions and the input idempotency ledger (docs/protocol/aep.md §7). Timestamps are Unix ms.

const SESSION_STATES = ["created", "idle", "running", "terminated"];
const DELIVERY = ["accepted", "delivered", "unknown", "failed"];
const RUNTIME = ["started", "completed", "failed", "unknown"];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("aep_sessions", (t) => {
    t.text("session_id").notNullable().primary();
    // The client's own key (docs/protocol/README.md §3.2): kept apart from the server's session id.
    t.text("session_key").nullable().unique("aep_sessions_key_idx");
    t.text("worker").notNullable();
    t.text("workdir").notNullable();
    t.text("worker_session_id").notNullable();
    // Whether the worker has a transcript for worker_session_id, so the next start must resume, not create (g1).
    t.boolean("worker_started").notNullable().defaultTo(false);
    t.text("state").notNullable().checkIn(SESSION_STATES);
    t.integer("last_seq").notNullable().defaultTo(0);
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
  });

  // Root records are kept (docs/protocol/aep.md §7.1): a client may retry an input id for as long as it likes.
  await knex.schema.createTable("aep_inputs", (t) => {
    t.text("session_id").notNullable().references("session_id").inTable("aep_sessions").onDelete("CASCADE");
    t.text("client_message_id").notNullable();
    t.text("execution_id").notNullable().unique("aep_inputs_execution_idx");
    t.text("payload_hash").notNullable();
    t.text("delivery_status").notNullable().checkIn(DELIVERY);
    t.text("runtime_status").nullable().checkIn(RUNTIME);
    t.text("error_code").nullable();
    t.bigInteger("created_at").notNullable();
    t.bigInteger("updated_at").notNullable();
    t.primary(["session_id", "client_message_id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("aep_inputs");
  await knex.schema.dropTable("aep_sessions");
}
