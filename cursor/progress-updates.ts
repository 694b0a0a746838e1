// A subagent's progress as its parent's Task card shows it (docs/protocol/cursor-tools.md §5.12): folded from the
// UpdateCurrentStep calls and results of the history, never kept as a second mutable state. The checkpoint files it
// under the parent's Task call id (communicate_update_states_by_parent_tool_call_id).
import { create } from "@bufbuild/protobuf";
import { type CommunicateUpdateTurnState, CommunicateUpdateTurnStateSchema } from "../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalMessage } from "../providers/messages.js";

export const PROGRESS_TOOL = "UpdateCurrentStep";

type Assistant = Extract<CanonicalMessage, { role: "assistant" }>;

function text(args: Record<string, unknown>, key: string): string | undefined {
  const value = args[key];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Steps an assistant message adds to its turn: thinking, text, then one per tool call. */
const leadingSteps = (m: Assistant) => (m.thinking !== undefined ? 1 : 0) + (m.text ? 1 : 0);

/**
 * The current turn's progress (the messages after its opening user message): one history entry per successful
 * UpdateCurrentStep with a current_step, at the 1-based position of its step in the turn; the last call that sets
 * final_summary or completed_subtitle supplies them. Undefined when the turn reported nothing.
 */
export function foldProgress(history: readonly CanonicalMessage[]): CommunicateUpdateTurnState | undefined {
  const opened = history.findLastIndex((m) => m.role === "user");
  const turn = history.slice(opened + 1);
  const failed = new Set(turn.flatMap((m) => (m.role === "tool" && m.isError ? [m.toolCallId] : [])));
  const answered = new Set(turn.flatMap((m) => (m.role === "tool" ? [m.toolCallId] : [])));
  const state = create(CommunicateUpdateTurnStateSchema);
  let steps = 0;
  let reported = false;
  for (const m of turn) {
    if (m.role !== "assistant") continue;
    steps += leadingSteps(m);
    for (const call of m.toolCalls) {
      steps += 1;
      if (call.name !== PROGRESS_TOOL || !answered.has(call.id) || failed.has(call.id)) continue;
      const args = JSON.parse(call.argumentsJson) as Record<string, unknown>;
      const step = text(args, "current_step");
      if (step) state.history.push({ $typeName: "agent.v1.CommunicateUpdateHistoryEntry", step, messageIndex: steps });
      const summary = text(args, "final_summary");
      const subtitle = text(args, "completed_subtitle");
      if (summary) state.finalSummary = summary;
      if (subtitle) state.completedSubtitle = subtitle;
      reported ||= step !== undefined || summary !== undefined || subtitle !== undefined;
    }
  }
  return reported ? state : undefined;
}
