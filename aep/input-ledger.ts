// The ledger facts a session announces (docs/protocol/aep.md §7, §8): an input is recorded before anything else
// sees it and acknowledged from what the ledger holds; a turn's end becomes its runtime fact — completed only for
// success — and one log line with its reason.
import { createHash, randomUUID } from "node:crypto";
import type { Logger } from "../log/logger.js";
import type { TurnEnd } from "../machines/aep-turn-ends.js";
import type { AepStore } from "../store/index.js";
import type { ErrorCause, ErrorCode, ServerEvent, SessionState } from "./wire/envelope.js";

export interface LedgerSession {
  store: AepStore;
  sessionId: string;
  state(): SessionState;
  emit(event: ServerEvent): void;
  sendError(code: ErrorCode, message: string, cause: ErrorCause): void;
}

/**
 * Records an input and announces `accepted` (or answers a retry from the existing row, or refuses a busy or ended
 * session); resolves the new execution id when the input may start a turn.
 */
export async function recordInput(
  s: LedgerSession,
  clientMessageId: string,
  data: { content: string; metadata?: Record<string, unknown> },
): Promise<string | undefined> {
  const cause = { client_message_id: clientMessageId };
  if (s.state() === "terminated") {
    s.sendError("SESSION_TERMINATED", "this session was terminated", cause);
    return undefined;
  }
  const payloadHash = createHash("sha256").update(JSON.stringify(data)).digest("hex");
  const executionId = `exec_${randomUUID()}`;
  const result = await s.store.recordInput({ sessionId: s.sessionId, clientMessageId, executionId, payloadHash });
  if (!result.recorded) {
    const existing = result.existing;
    if (existing.payloadHash !== payloadHash) {
      s.sendError("INVALID_MESSAGE", `input id ${clientMessageId} was already used with a different payload`, {
        ...cause,
        execution_id: existing.executionId,
      });
      return undefined;
    }
    const errorCode = existing.errorCode as ErrorCode | undefined;
    s.emit({
      type: "input.ack",
      data: {
        client_message_id: clientMessageId,
        execution_id: existing.executionId,
        status: existing.deliveryStatus,
        duplicate: true,
        ...(errorCode ? { error_code: errorCode } : {}),
      },
    });
    return undefined;
  }
  s.emit({
    type: "input.ack",
    data: { client_message_id: clientMessageId, execution_id: executionId, status: "accepted" },
  });
  const state = s.state();
  if (state === "idle") return executionId;
  const code: ErrorCode = state === "running" ? "SESSION_BUSY" : "SESSION_TERMINATED";
  await s.store.setDelivery(executionId, "failed", code);
  s.emit({
    type: "input.ack",
    data: { client_message_id: clientMessageId, execution_id: executionId, status: "failed", error_code: code },
  });
  return undefined;
}

type RuntimeFact = {
  type: "runtime.execution.completed" | "runtime.execution.failed";
  data: { execution_id: string; status: "completed" | "failed"; finished_at: number; error_code?: ErrorCode };
};

/**
 * runtime.execution.completed means success (docs/protocol/aep.md §4): a stopped turn is failed too, without a code
 * (AEP has none for a stop; its done.reason says why).
 */
export function runtimeFact(executionId: string, end: TurnEnd): RuntimeFact {
  const failed = end.outcome !== "completed";
  const code = end.outcome === "failed" ? end.code : undefined;
  return {
    type: failed ? "runtime.execution.failed" : "runtime.execution.completed",
    data: {
      execution_id: executionId,
      status: failed ? "failed" : "completed",
      finished_at: Date.now(),
      ...(code ? { error_code: code } : {}),
    },
  };
}

/** Why a turn failed or stopped, in the gateway's own log too (the client got it as error + done). */
export function logTurnEnd(log: Logger, sessionId: string, executionId: string, end: TurnEnd): void {
  log.info("aep turn done", {
    session_id: sessionId,
    execution_id: executionId,
    outcome: end.outcome,
    cause: end.cause,
    ...(end.outcome === "failed" ? { code: end.code, reason: end.message } : {}),
    ...(end.outcome === "stopped" ? { reason: end.reason } : {}),
  });
}
