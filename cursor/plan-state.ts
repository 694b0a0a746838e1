// The conversation's plans as a fold of its history (docs/protocol/cursor-run.md §8.9): every CreatePlan call whose
// result says the plan was saved, in history order, the last one being the current plan. Nothing else is a source:
// the checkpoint's `plan` / `plans` are this fold's view, so a restart, a resume or a replay derive the same state.
import type { CanonicalMessage } from "../providers/messages.js";
import { CREATE_PLAN, planSavedLine } from "./tools/create-plan.js";

export interface SavedPlan {
  /** The CreatePlan call's id: the plan's key in the checkpoint's `plans`. */
  id: string;
  /** Where the client saved it (CreatePlanResult.plan_uri). */
  uri: string;
  /** The plan text the model wrote. */
  plan: string;
}

const SAVED_PREFIX = planSavedLine("");

function planText(argumentsJson: string): string {
  const args = JSON.parse(argumentsJson) as { plan?: unknown };
  return typeof args.plan === "string" ? args.plan : "";
}

/** Every plan the history saved, oldest first; empty when there is none. */
export function savedPlans(history: readonly CanonicalMessage[]): SavedPlan[] {
  const calls = new Map<string, string>();
  const plans: SavedPlan[] = [];
  for (const m of history) {
    if (m.role === "assistant") {
      for (const c of m.toolCalls) if (c.name === CREATE_PLAN) calls.set(c.id, c.argumentsJson);
    } else if (m.role === "tool" && m.toolName === CREATE_PLAN && !m.isError) {
      const args = calls.get(m.toolCallId);
      const [first = ""] = m.content.split("\n", 1);
      if (args === undefined || !first.startsWith(SAVED_PREFIX)) continue;
      plans.push({ id: m.toolCallId, uri: first.slice(SAVED_PREFIX.length), plan: planText(args) });
    }
  }
  return plans;
}
