import type { Knex } from "knex";

// The input idempotency ledger (docs/protocol/aep.md §7, §7.2): one root row per (session, client message id),
// written before the worker sees the input. Delivery: accepted → delivered | unknown | failed. Runtime: started →
// completed | failed | unknown. `unknown` is a fact, never a reason to re-send (aep.md §7.2).

export type DeliveryStatus = "accepted" | "delivered" | "unknown" | "failed";
export type RuntimeStatus = "started" | "completed" | "failed" | "unknown";

export interface AepInputRecord {
  sessionId: string;
  clientMessageId: string;
  executionId: string;
  payloadHash: string;
  deliveryStatus: DeliveryStatus;
  runtimeStatus?: RuntimeStatus;
  errorCode?: string;
}

interface Row {
  session_id: string;
  client_message_id: string;
  execution_id: string;
  payload_hash: string;
  delivery_status: DeliveryStatus;
  runtime_status: RuntimeStatus | null;
  error_code: string | null;
}

const fromRow = (r: Row): AepInputRecord => ({
  sessionId: r.session_id,
  clientMessageId: r.client_message_id,
  executionId: r.execution_id,
  payloadHash: r.payload_hash,
  deliveryStatus: r.delivery_status,
  ...(r.runtime_status === null ? {} : { runtimeStatus: r.runtime_status }),
  ...(r.error_code === null ? {} : { errorCode: r.error_code }),
});

export type RecordInputResult = { recorded: true } | { recorded: false; existing: AepInputRecord };

/** Inserts the accepted row, or returns the row already holding this (session, client message id). */
export async function recordInput(
  db: Knex,
  r: Pick<AepInputRecord, "sessionId" | "clientMessageId" | "executionId" | "payloadHash">,
): Promise<RecordInputResult> {
  // One immediate transaction: the read and the insert cannot be split by another writer.
  return db.transaction(async (tx) => {
    const row: Row | undefined = await tx("aep_inputs")
      .where({ session_id: r.sessionId, client_message_id: r.clientMessageId })
      .first();
    if (row) return { recorded: false, existing: fromRow(row) };
    const now = Date.now();
    await tx("aep_inputs").insert({
      session_id: r.sessionId,
      client_message_id: r.clientMessageId,
      execution_id: r.executionId,
      payload_hash: r.payloadHash,
      delivery_status: "accepted",
      runtime_status: null,
      error_code: null,
      created_at: now,
      updated_at: now,
    });
    return { recorded: true };
  });
}

export async function setDelivery(
  db: Knex,
  executionId: string,
  status: Exclude<DeliveryStatus, "accepted">,
  errorCode?: string,
): Promise<void> {
  await db("aep_inputs")
    .where("execution_id", executionId)
    .update({ delivery_status: status, error_code: errorCode ?? null, updated_at: Date.now() });
}

export async function setRuntime(
  db: Knex,
  executionId: string,
  status: RuntimeStatus,
  errorCode?: string,
): Promise<void> {
  const set: Record<string, unknown> = { runtime_status: status, updated_at: Date.now() };
  if (errorCode !== undefined) set.error_code = errorCode;
  await db("aep_inputs").where("execution_id", executionId).update(set);
}

export async function getInput(
  db: Knex,
  sessionId: string,
  clientMessageId: string,
): Promise<AepInputRecord | undefined> {
  const row: Row | undefined = await db("aep_inputs")
    .where({ session_id: sessionId, client_message_id: clientMessageId })
    .first();
  return row && fromRow(row);
}

/**
 * After a gateway restart nobody knows what a worker did with an input in flight: accepted-but-unconfirmed
 * deliveries and started-but-unfinished executions become unknown (and are never re-sent).
 */
export async function settleInputsAfterRestart(db: Knex): Promise<void> {
  const now = Date.now();
  await db("aep_inputs").where("delivery_status", "accepted").update({ delivery_status: "unknown", updated_at: now });
  await db("aep_inputs").where("runtime_status", "started").update({ runtime_status: "unknown", updated_at: now });
}
