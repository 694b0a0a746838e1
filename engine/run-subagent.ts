// What a run takes from its place in a subagent family (docs/protocol/cursor-run.md §13; docs/protocol/cursor-tools.md
// §5.11, §6.3): a child's mode and tool set, the settings a parent's Task calls need, and the completion messages a
// background child's finish appends to its parent conversation exactly once.
import { communicateUpdateTurnState } from "../cursor/checkpoint-builder.js";
import type { DerivedState } from "../cursor/derived-state.js";
import {
  type AgentRunRequest,
  type CommunicateUpdateTurnState,
  type BackgroundTaskCompletion,
  BackgroundTaskStatus,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeAssets, PromptAssets } from "../prompt/assets.js";
import { subagentMode } from "../prompt/subagent-tools.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { toolDriver } from "../cursor/tools/registry.js";
import type { SubagentSettings } from "../cursor/tools/types.js";
import type { ParentLink } from "../transport/agent-backend.js";
import type { Store } from "../store/index.js";
import { modeAssets, type RunRequestFacts } from "./run-setup.js";

/** A request with parent headers is a subagent's run: the agent's prompt with the subagent tool set. */
export function runMode(
  assets: PromptAssets,
  facts: RunRequestFacts,
  request: AgentRunRequest,
  parent: ParentLink | undefined,
): ModeAssets {
  const mode = modeAssets(assets, facts);
  if (!parent) return mode;
  return subagentMode(assets, {
    suppressProgressTool: request.suppressSubagentProgressUpdateTool === true,
    runnable: (name) => toolDriver(name) !== undefined,
  });
}

/** What this run's Task calls resolve their children's models and conversations from. */
export function subagentSettings(request: AgentRunRequest): SubagentSettings {
  return {
    parentModelId: request.requestedModel?.modelId ?? "",
    conversationGroupId: request.conversationGroupId,
    modelOverrides: request.subagentModelOverrides,
  };
}

/** How each completion status reads; the status comes from the client, so an unknown value reads as "finished". */
const STATUS_TEXT = new Map<BackgroundTaskStatus, string>([
  [BackgroundTaskStatus.SUCCESS, "succeeded"],
  [BackgroundTaskStatus.ERROR, "failed"],
  [BackgroundTaskStatus.ABORTED, "was aborted"],
]);

/** The completion as the model reads it: which subagent, how it ended, its report, then the follow-up reminder. */
function completionText(c: BackgroundTaskCompletion, followUp: string): string {
  const lines = [
    `Subagent name: ${c.title}`,
    `Subagent ID: ${c.subagentId}`,
    ...(c.toolCallId ? [`Task call: ${c.toolCallId}`] : []),
    `The subagent ${STATUS_TEXT.get(c.status) ?? "finished"}.`,
    ...(c.outputPath ? [`Transcript: ${c.outputPath}`] : []),
  ];
  const detail = c.detail?.trim() ? `\n\n${c.detail.trim()}` : "";
  return `<subagent_completion>\n${lines.join("\n")}${detail}\n</subagent_completion>\n\n${followUp}`;
}

/**
 * One runtime message per finished subagent, appended at most once per conversation (event
 * `subagent-completed:{subagent_id}`): a retried completion gets the stored message back, and one the history already
 * holds is not appended again (docs/protocol/cursor-run.md §8.6, §12.2).
 */
export async function appendCompletions(
  { store, assets }: { store: Store; assets: PromptAssets },
  facts: RunRequestFacts,
  requestId: string,
  completions: readonly BackgroundTaskCompletion[],
  history: readonly CanonicalMessage[],
): Promise<CanonicalMessage[]> {
  const present = new Set(history.flatMap((m) => (m.role === "user" && m.eventId ? [m.eventId] : [])));
  const appended: CanonicalMessage[] = [];
  for (const c of completions) {
    const eventId = `subagent-completed:${c.subagentId}`;
    if (present.has(eventId)) continue;
    present.add(eventId);
    const message: CanonicalMessage = {
      role: "user",
      content: completionText(c, assets.subagentCompletion),
      origin: "runtime",
      eventId,
    };
    const stored = await store.appendRuntimeMessageOnce(
      facts.conversationId,
      requestId,
      eventId,
      JSON.stringify(message),
    );
    appended.push(JSON.parse(stored.body) as CanonicalMessage);
  }
  return appended;
}

/** A subagent's progress, filed under its parent's Task call id (docs/protocol/cursor-tools.md §5.12). */
export function progressFor(
  parent: ParentLink | undefined,
  derived: DerivedState,
): { progress?: { parentToolCallId: string; state: CommunicateUpdateTurnState } } {
  const parentToolCallId = parent?.toolCallId;
  if (parentToolCallId === undefined || !derived.steps) return {};
  return { progress: { parentToolCallId, state: communicateUpdateTurnState(derived.steps) } };
}
