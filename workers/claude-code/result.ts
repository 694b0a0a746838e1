// The `result` frame ends one turn. Its outcome is read from `is_error` and `terminal_reason`, never from `subtype`
// alone: an upstream failure arrives as subtype "success" with is_error true (fixture f1), an interrupt as
// error_during_execution with terminal_reason aborted_* (c1).
import type { TurnOutcome, TurnUsage, WorkerEvent } from "../types.js";
import type { StdoutFrame } from "./frames.js";

/** Result subtypes that mean "a configured limit was reached" (docs/protocol/claude-code.md: the four error subtypes).
 * */
const limitSubtypes = new Set(["error_max_turns", "error_max_budget_usd", "error_max_structured_output_retries"]);
const limitReasons = new Set(["max_turns", "error_max_turns", "max_budget_usd", "max_structured_output_retries"]);

export function outcomeOf(frame: StdoutFrame): TurnOutcome {
  if (frame.is_error !== true) return "completed";
  const reason = typeof frame.terminal_reason === "string" ? frame.terminal_reason : "";
  if (reason === "api_error") return "api_error";
  if (reason.startsWith("aborted")) return "stopped";
  if (limitReasons.has(reason) || (typeof frame.subtype === "string" && limitSubtypes.has(frame.subtype)))
    return "limit";
  return "failed";
}

export function turnFinishedOf(frame: StdoutFrame): Extract<WorkerEvent, { type: "turn.finished" }> {
  const outcome = outcomeOf(frame);
  const event: Extract<WorkerEvent, { type: "turn.finished" }> = {
    type: "turn.finished",
    outcome,
    usage: usageOf(frame),
  };
  if (outcome === "completed") return event;
  const errors = Array.isArray(frame.errors) ? frame.errors.filter((e): e is string => typeof e === "string") : [];
  const message = typeof frame.result === "string" && frame.result !== "" ? frame.result : errors.join("\n");
  const code = typeof frame.terminal_reason === "string" ? frame.terminal_reason : String(frame.subtype ?? "error");
  return { ...event, ...(message ? { message } : {}), errorCode: code };
}

function usageOf(frame: StdoutFrame): TurnUsage {
  const usage = (typeof frame.usage === "object" && frame.usage !== null ? frame.usage : {}) as Record<string, unknown>;
  const num = (value: unknown): number | undefined =>
    typeof value === "number" && Number.isFinite(value) ? value : undefined;
  const entries: Array<[keyof TurnUsage, number | undefined]> = [
    ["inputTokens", num(usage.input_tokens)],
    ["outputTokens", num(usage.output_tokens)],
    ["cacheReadTokens", num(usage.cache_read_input_tokens)],
    ["cacheWriteTokens", num(usage.cache_creation_input_tokens)],
    ["costUsd", num(frame.total_cost_usd)],
    ["durationMs", num(frame.duration_ms)],
    ["numTurns", num(frame.num_turns)],
  ];
  return Object.fromEntries(entries.filter(([, value]) => value !== undefined)) as TurnUsage;
}
