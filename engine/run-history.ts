// A run's canonical history and what is folded from it as it grows: the to-do list and progress
// (cursor/derived-state.ts, docs/protocol/cursor-run.md §8.9), the saved plans (§8.9), the children its Task calls
// started (§13.2) and the parts the context breakdown counts (§9.4). Nothing here is set any other way than by the
// messages it holds.
import { foldDerivedState, type DerivedState } from "../cursor/derived-state.js";
import { savedPlans, type SavedPlan } from "../cursor/plan-state.js";
import { tokenBreakdown } from "../cursor/token-breakdown.js";
import { TASK, taskSubagentId } from "../cursor/tools/task.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { summaryText } from "./compaction.js";
import { addProjected, type ProjectedParts } from "./run-context.js";

const NOTHING_PROJECTED: ProjectedParts = { rules: "", skills: "", mcp: "", subagents: "", conversationCharacters: 0 };

export class RunHistory {
  messages: CanonicalMessage[] = [];
  derived: DerivedState = {};
  /** Saved plans, oldest first; a batch holds a CreatePlan call with its result (a round is pushed whole). */
  readonly plans: SavedPlan[] = [];
  /** Task call id → the subagent id its successful result names (the child's conversation), in history order. */
  readonly subagents = new Map<string, string>();
  /** Arguments of the Task calls whose result has not come yet. */
  private readonly openTasks = new Map<string, string>();
  private projected = NOTHING_PROJECTED;

  /** Starts over from `messages`: the history a run loads, or the one a compaction leaves. */
  reset(messages: readonly CanonicalMessage[]): void {
    this.messages = [];
    this.derived = {};
    this.plans.length = 0;
    this.subagents.clear();
    this.openTasks.clear();
    this.projected = NOTHING_PROJECTED;
    this.push(...messages);
  }

  push(...messages: CanonicalMessage[]): void {
    this.messages.push(...messages);
    this.derived = foldDerivedState(messages, this.derived);
    this.plans.push(...savedPlans(messages));
    // A copy per push, not per message: the empty parts it starts from are shared.
    const projected = { ...this.projected };
    for (const m of messages) {
      addProjected(projected, m);
      this.addSubagent(m);
    }
    this.projected = projected;
  }

  private addSubagent(m: CanonicalMessage): void {
    if (m.role === "assistant") {
      for (const call of m.toolCalls) if (call.name === TASK) this.openTasks.set(call.id, call.argumentsJson);
      return;
    }
    if (m.role !== "tool" || m.toolName !== TASK) return;
    const args = this.openTasks.get(m.toolCallId);
    this.openTasks.delete(m.toolCallId);
    const child = args === undefined || m.isError ? undefined : taskSubagentId(args, m.content);
    if (child !== undefined) this.subagents.set(m.toolCallId, child);
  }

  /** The checkpoint's context breakdown of what the next request holds (docs/protocol/cursor-run.md §9.4). */
  breakdown(usedTokens: number, maxTokens: number, systemPrompt: string, toolDefinitions: string) {
    const summarizedConversation = summaryText(this.messages);
    return tokenBreakdown({
      usedTokens,
      maxTokens,
      systemPrompt,
      toolDefinitions,
      ...this.projected,
      conversationCharacters: this.projected.conversationCharacters - summarizedConversation.length,
      summarizedConversation,
    });
  }
}
