// How an AEP turn ends (docs/protocol/aep.md §8.3): every cause named once, the end each records, and the stats
// `done` carries. The turn machine draws one edge per cause; the path tests check that every cause is reached.
import type { ErrorCode } from "../aep/wire/envelope.js";
import { errorCodeOf } from "../aep/wire/mapping.js";
import type { TurnUsage, WorkerEvent } from "../workers/types.js";

/** Why a turn ended: each is its own edge in the machine, and the one recorded in its output. */
export type TurnEndCause = TurnEnd["cause"];

export type TurnEnd =
  | { outcome: "completed"; cause: "finished"; usage?: TurnUsage }
  | {
      outcome: "failed";
      cause:
        | "not_delivered"
        | "result_error"
        | "api_error"
        | "limit"
        | "worker_auth"
        | "output_limit"
        | "worker_crash"
        | "sigkill"
        | "turn_timeout"
        | "worker_timeout";
      code: ErrorCode;
      message: string;
      usage?: TurnUsage;
    }
  | {
      outcome: "stopped";
      cause: "interrupted" | "stop_honoured" | "exited_while_stopping" | "killed" | "session_control";
      reason: string;
      usage?: TurnUsage;
    };

/** The end a cause records, from the event that took the edge (`w`: the worker's, `control`: a session control's). */
export function endOf(
  cause: TurnEndCause,
  on: { w?: WorkerEvent | undefined; control?: string | undefined; stopReason: string; detail?: string | undefined },
): TurnEnd {
  const { w, detail } = on;
  const usage = w?.type === "turn.finished" && w.usage ? { usage: w.usage } : {};
  switch (cause) {
    case "finished":
      return { outcome: "completed", cause, ...usage };
    case "not_delivered":
      return {
        outcome: "failed",
        cause,
        code: "WORKER_START_FAILED",
        message: `input not delivered to the worker: ${detail}`,
      };
    case "result_error":
    case "api_error":
    case "limit":
    case "worker_auth":
    case "output_limit": {
      // docs/protocol/aep.md has no code for an upstream error or a turn limit; the message says which it was.
      const f = w as Extract<WorkerEvent, { type: "turn.finished" }>;
      return {
        outcome: "failed",
        cause,
        code: errorCodeOf(f.errorCode),
        message: f.message ?? `turn ${f.outcome}`,
        ...usage,
      };
    }
    case "worker_crash": {
      const exit = w as Extract<WorkerEvent, { type: "worker.exited" }>;
      const message = `worker exited during the turn (code ${exit.code}, signal ${exit.signal})`;
      return { outcome: "failed", cause, code: "WORKER_CRASH", message };
    }
    case "sigkill":
      // docs/protocol/aep.md §10: a SIGKILL nobody here sent (the OOM killer, an operator) has its own code.
      return { outcome: "failed", cause, code: "PROCESS_SIGKILL", message: "the worker process was killed (SIGKILL)" };
    case "turn_timeout":
      return {
        outcome: "failed",
        cause,
        code: "TURN_TIMEOUT",
        message: "the turn ran past its deadline (aep.turnTimeoutMs)",
      };
    case "worker_timeout":
      return {
        outcome: "failed",
        cause,
        code: "WORKER_TIMEOUT",
        message: "the worker did not begin the turn within 2 minutes of the delivery",
      };
    case "interrupted":
      return { outcome: "stopped", cause, reason: "interrupted", ...usage };
    case "stop_honoured":
    case "exited_while_stopping":
    case "killed":
      return { outcome: "stopped", cause, reason: on.stopReason, ...usage };
    case "session_control":
      return { outcome: "stopped", cause, reason: on.control ?? on.stopReason };
  }
}

export function statsOf(u: TurnUsage): Record<string, unknown> {
  const stats: Record<string, unknown> = {
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_read_tokens: u.cacheReadTokens,
    cache_write_tokens: u.cacheWriteTokens,
    total_cost_usd: u.costUsd,
    duration_ms: u.durationMs,
    num_turns: u.numTurns,
  };
  return Object.fromEntries(Object.entries(stats).filter(([, v]) => v !== undefined));
}
