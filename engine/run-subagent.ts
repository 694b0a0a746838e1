// What a run takes from its place in a subagent family (docs/protocol/cursor-run.md §13; docs/protocol/cursor-tools.md
// §5.11, §6.3): a child's mode and tool set, the settings a parent's Task calls need, the completion messages a
// background child's finish appends to its parent conversation exactly once, and the progress its checkpoints file
// under parent Task call ids.
import { fromBinary } from "@bufbuild/protobuf";
import { foldDerivedState, type StepState } from "../cursor/derived-state.js";
import {
  type AgentRunRequest,
  type BackgroundTaskCompletion,
  BackgroundTaskStatus,
  ConversationStateStructureSchema,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeAssets, PromptAssets } from "../prompt/assets.js";
import { subagentMode } from "../prompt/subagent-tools.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { toolDriver } from "../cursor/tools/registry.js";
import type { SubagentSettings } from "../cursor/tools/types.js";
import type { ParentLink } from "../transport/agent-backend.js";
import type { Store } from "../store/index.js";
import type { HistoryCache } from "./history-cache.js";
import type { RunHistory } from "./run-history.js";
import { loadHistory, modeAssets, type RunRequestFacts } from "./run-setup.js";

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

/** A child's progress as of its head revision: what its last committed checkpoint's history folds to. */
interface ChildProgress {
  revision: number;
  steps: StepState | undefined;
}

/**
 * The progress a run's checkpoint files under parent Task call ids (docs/protocol/cursor-run.md §13.2): its own, under
 * the Task call it arrived for, and each child's its Task calls started, folded from the child conversation's stored
 * history with the same fold as the run's own. A child is read again only when its head moved, so a checkpoint costs
 * one head look-up per child its history names.
 */
export class SubagentProgress {
  private readonly children = new Map<string, ChildProgress>();

  constructor(
    private readonly deps: { store: Store; history: HistoryCache },
    private readonly parent: ParentLink | undefined,
  ) {}

  async entries(history: RunHistory): Promise<Map<string, StepState>> {
    const entries = new Map<string, StepState>();
    const own = this.parent?.toolCallId;
    if (own !== undefined && history.derived.steps) entries.set(own, history.derived.steps);
    for (const [taskCallId, subagentId] of history.subagents) {
      const steps = await this.stepsOf(subagentId);
      if (steps) entries.set(taskCallId, steps);
    }
    return entries;
  }

  /** What is durable of the child so far; nothing while it has no checkpoint (or none in this store). */
  private async stepsOf(conversationId: string): Promise<StepState | undefined> {
    const { store } = this.deps;
    const head = await store.getHead(conversationId);
    if (!head) return undefined;
    const known = this.children.get(conversationId);
    if (known?.revision === head.revision) return known.steps;
    const checkpoint = await store.getBlob(head.checkpointId);
    if (!checkpoint) throw new Error(`the head checkpoint of subagent ${conversationId} is not stored`);
    const state = fromBinary(ConversationStateStructureSchema, checkpoint);
    const messages = await loadHistory(store, this.deps.history, conversationId, state);
    const steps = foldDerivedState(messages).steps;
    this.children.set(conversationId, { revision: head.revision, steps });
    return steps;
  }
}
