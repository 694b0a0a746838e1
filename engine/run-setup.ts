// Setting a run up from its run_request (docs/protocol/cursor-run.md §1.1, §8.1–§8.2, §8.7, §11): which model and
// mode, and the history the client's checkpoint references (the runtime message is engine/run-context.ts).
import { create, fromBinary } from "@bufbuild/protobuf";
import { imageBlobs, referencedBlobs } from "../cursor/attachments.js";
import type { CheckpointSnapshot, TurnStart } from "../cursor/checkpoint-builder.js";
import type { CheckpointKind, CheckpointPlan } from "../machines/checkpoint.js";
import {
  AgentMode,
  BackgroundTaskCompletionReason,
  BackgroundTaskKind,
  type BackgroundTaskCompletion,
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
  type ConversationTurnStructure,
  type AgentRunRequest,
  type ConversationStateStructure,
  type RequestContext,
  SimulatedMsgReason,
  type UserMessage,
  UserMessageSchema,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeAssets, PromptAssets } from "../prompt/assets.js";
import type { CanonicalMessage } from "../providers/messages.js";
import type { AssistantTurn } from "../machines/model-call-contract.js";
import type { ToolCompletion, ToolInvocation } from "../cursor/tools/types.js";

type Assistant = Extract<CanonicalMessage, { role: "assistant" }>;
import { modeFromWire, wireModeName } from "../cursor/modes.js";
import { executePlanTurn } from "../cursor/plan-actions.js";
import { decodeRootMessage, RootMessageError } from "../cursor/root-messages.js";
import type { Store } from "../store/index.js";
import type { HistoryCache } from "./history-cache.js";
import { hexIds } from "../cursor/blob-graph.js";
import { RunSetupError } from "./run-errors.js";

/**
 * A new user message opens a turn (from user_message_action, start_plan_action or execute_plan_action, each with the
 * mode it runs in); a resume continues the checkpoint's last turn; a summarize replaces the history with its summary;
 * background subagents that finished after the parent's turn ended open a turn of their own
 * (docs/protocol/cursor-run.md §2.2, §8.10, §8.11, §11, §13).
 */
export type RunAction =
  | { kind: "userMessage"; userMessage: UserMessage; mode: AgentMode; actionContext?: string }
  | { kind: "resume"; turnId: Uint8Array }
  | { kind: "summarize" }
  | { kind: "backgroundCompletion"; completions: BackgroundTaskCompletion[] };

export interface RunRequestFacts {
  conversationId: string;
  state: ConversationStateStructure;
  action: RunAction;
  requestContext: RequestContext | undefined;
}

/** The parts of a run_request this slice serves; anything else is refused with a clear reason. */
export function readRunRequest(req: AgentRunRequest): RunRequestFacts {
  const conversationId = req.conversationId;
  if (!conversationId) throw new RunSetupError("run_request carries no conversation_id", "invalid_argument");
  const state = req.conversationState ?? create(ConversationStateStructureSchema);
  const action = req.action?.action;
  const opened = (
    userMessage: UserMessage,
    mode: AgentMode,
    requestContext: RequestContext | undefined,
    actionContext?: string,
  ): RunRequestFacts => ({
    conversationId,
    state,
    action: { kind: "userMessage" as const, userMessage, mode, ...(actionContext ? { actionContext } : {}) },
    requestContext,
  });
  if (action?.case === "userMessageAction" && action.value.userMessage) {
    const { userMessage, requestContext } = action.value;
    return opened(userMessage, userMessage.mode, requestContext);
  }
  // Planning is plan mode whatever the message's own mode field says (docs/protocol/cursor-run.md §8.11).
  if (action?.case === "startPlanAction" && action.value.userMessage) {
    return opened(action.value.userMessage, AgentMode.PLAN, action.value.requestContext);
  }
  if (action?.case === "executePlanAction") {
    const turn = executePlanTurn(action.value);
    if (!turn) throw new RunSetupError("execute_plan_action carries no plan to execute", "invalid_argument");
    return opened(turn.userMessage, turn.mode, action.value.requestContext, turn.actionContext);
  }
  if (action?.case === "resumeAction") {
    const turnId = state.turns[state.turns.length - 1];
    if (!turnId)
      throw new RunSetupError("resume_action with a checkpoint that has no turn to resume", "invalid_argument");
    return {
      conversationId,
      state,
      action: { kind: "resume", turnId },
      requestContext: action.value.requestContext,
    };
  }
  if (action?.case === "summarizeAction") {
    if (state.pendingToolCalls.length)
      throw new RunSetupError("summarize_action while a tool round is pending", "failed_precondition");
    return { conversationId, state, action: { kind: "summarize" }, requestContext: undefined };
  }
  if (action?.case === "backgroundTaskCompletionAction") {
    const completions = finishedSubagents(action.value.completions);
    return {
      conversationId,
      state,
      action: { kind: "backgroundCompletion", completions },
      requestContext: undefined,
    };
  }
  throw new RunSetupError(
    `conversation action ${JSON.stringify(action?.case ?? "none")} is not supported by byok-gateway yet`,
    "failed_precondition",
  );
}

/** Only finished subagents are served: a shell's completion or a progress report is refused, naming what came. */
function finishedSubagents(completions: BackgroundTaskCompletion[]): BackgroundTaskCompletion[] {
  if (completions.length === 0)
    throw new RunSetupError("background_task_completion_action carries no completion", "invalid_argument");
  for (const c of completions) {
    if (c.kind !== BackgroundTaskKind.SUBAGENT || c.reason !== BackgroundTaskCompletionReason.TASK_FINISHED) {
      const what = `${BackgroundTaskKind[c.kind] ?? c.kind} ${BackgroundTaskCompletionReason[c.reason] ?? c.reason}`;
      throw new RunSetupError(
        `background task completion ${what} is not supported by byok-gateway yet`,
        "failed_precondition",
      );
    }
    if (!c.subagentId)
      throw new RunSetupError(
        "a finished subagent's background task completion carries no subagent_id",
        "invalid_argument",
      );
  }
  return completions;
}

/**
 * The action's mode picks the assets; an action without a user message (resume, summarize) takes the checkpoint's
 * mode, which an approved SwitchMode moved. A mode without assets is refused: there is no silent fallback
 * (docs/protocol/cursor-run.md §8.7).
 */
export function modeAssets(assets: PromptAssets, facts: RunRequestFacts): ModeAssets {
  const wire = facts.action.kind === "userMessage" ? facts.action.mode : (facts.state.mode ?? AgentMode.UNSPECIFIED);
  const mode = modeFromWire(wire);
  if (!mode) throw new RunSetupError(`mode ${wireModeName(wire)} is not served by byok-gateway`, "failed_precondition");
  return assets.modes.get(mode)!;
}

/** The turn a completion opens is the client's simulated user message, as Cursor's UI shows it. */
export function completionUserMessage(completions: readonly BackgroundTaskCompletion[]): UserMessage {
  const first = completions[0]!;
  return create(UserMessageSchema, {
    text: completions.map((c) => c.title || c.subagentId || "").join("\n"),
    messageId: `subagent-completed:${first.subagentId}`,
    mode: AgentMode.AGENT,
    isSimulatedMsg: true,
    simulatedMsgReason: SimulatedMsgReason.BACKGROUND_TASK_COMPLETION,
    simulatedMessageMetadata: { title: first.title, taskId: first.taskId },
  });
}

/** The blobs the action refers to, which the client may have to send: a resumed turn, the user's attachments and
 * images. */
export function actionBlobs(action: RunAction): Uint8Array[] {
  if (action.kind === "resume") return [action.turnId];
  return action.kind === "userMessage"
    ? [...referencedBlobs(action.userMessage), ...imageBlobs(action.userMessage)]
    : [];
}

/** The turn the run writes: a new one for a user message or a completion, the last one for a resume. */
export async function turnStart(store: Store, action: RunAction): Promise<TurnStart> {
  if (action.kind === "userMessage") return { kind: "new", userMessage: action.userMessage };
  if (action.kind === "backgroundCompletion")
    return { kind: "new", userMessage: completionUserMessage(action.completions) };
  if (action.kind === "summarize") return { kind: "none" };
  return { kind: "continue", ...(await loadResumedTurn(store, action.turnId)) };
}

/** The turn a resume continues: its user message and steps, by blob id (the client holds their bytes). */
export async function loadResumedTurn(
  store: Store,
  turnId: Uint8Array,
): Promise<{ userMessage: Uint8Array; steps: Uint8Array[] }> {
  const bytes = await store.getBlob(turnId);
  if (!bytes)
    throw new RunSetupError("the turn to resume is neither stored nor provided by the client", "invalid_argument");
  let turn: ConversationTurnStructure["turn"];
  try {
    turn = fromBinary(ConversationTurnStructureSchema, bytes).turn;
  } catch (e) {
    throw new RunSetupError(
      `the turn to resume is not a ConversationTurnStructure: ${(e as Error).message}`,
      "invalid_argument",
    );
  }
  if (turn.case !== "agentConversationTurn")
    throw new RunSetupError("only an agent conversation turn can be resumed", "invalid_argument");
  return { userMessage: turn.value.userMessage, steps: turn.value.steps };
}

/** A staged checkpoint's pending entry is the assistant batch this gateway wrote; anything else is refused. */
export function pendingRound(
  state: ConversationStateStructure,
): Extract<CanonicalMessage, { role: "assistant" }> | undefined {
  const [pending, ...more] = state.pendingToolCalls;
  if (pending === undefined) return undefined;
  let message: CanonicalMessage;
  try {
    if (more.length) throw new RootMessageError("more than one pending tool round");
    message = decodeRootMessage(new TextEncoder().encode(pending));
  } catch (e) {
    throw new RunSetupError(
      `the checkpoint's pending tool calls cannot be resumed: ${(e as Error).message}`,
      "invalid_argument",
    );
  }
  if (message.role !== "assistant" || message.toolCalls.length === 0) {
    throw new RunSetupError("the checkpoint's pending tool calls are not an assistant tool round", "invalid_argument");
  }
  return message;
}

/** The checkpoint's root ids as the history cache keys them. */
export function rootIds(state: ConversationStateStructure): readonly string[] {
  return hexIds(state.rootPromptMessagesJson);
}

/**
 * Decodes the checkpoint's model transcript; the first root must be the one system prompt (docs/protocol/cursor-run.md
 * §2.4, §4.2). The prefix
 * the conversation's last loaded history shares is reused decoded; only the roots after it are read and decoded.
 */
export async function loadHistory(
  store: Store,
  cache: HistoryCache,
  conversationId: string,
  state: ConversationStateStructure,
): Promise<CanonicalMessage[]> {
  const ids = rootIds(state);
  const known = cache.prefix(conversationId, ids);
  const messages = [...known.messages];
  const sizes = [...known.sizes];
  const blobs = await store.getBlobs(state.rootPromptMessagesJson.slice(messages.length));
  for (const bytes of blobs) {
    const i = messages.length;
    if (!bytes)
      throw new RunSetupError(`checkpoint root ${i} is neither stored nor provided by the client`, "invalid_argument");
    try {
      messages.push(decodeRootMessage(bytes));
    } catch (e) {
      if (e instanceof RootMessageError)
        throw new RunSetupError(`checkpoint root ${i}: ${e.message}`, "invalid_argument");
      throw e;
    }
    sizes.push(bytes.byteLength);
  }
  if (messages.length > 0 && (messages[0]!.role !== "system" || messages.slice(1).some((m) => m.role === "system"))) {
    throw new RunSetupError("checkpoint history must start with exactly one system prompt root", "invalid_argument");
  }
  cache.remember(conversationId, ids, { messages, sizes });
  return messages.slice(1);
}

/** A model response as the canonical assistant batch; a response that asked for tools names its round. */
export function assistantMessage(turn: AssistantTurn, toolRoundId: string | undefined): Assistant {
  return {
    role: "assistant",
    text: turn.text,
    ...(turn.thinking !== undefined ? { thinking: turn.thinking } : {}),
    ...(turn.replay ? { replay: turn.replay } : {}),
    ...(toolRoundId ? { toolRoundId } : {}),
    toolCalls: turn.toolCalls,
  };
}

/** A call's terminal result as the canonical tool message (docs/protocol/cursor-run.md §8.4). */
export function toolResultMessage(
  invocation: ToolInvocation,
  completion: ToolCompletion,
  toolRoundId: string | undefined,
): Extract<CanonicalMessage, { role: "tool" }> {
  return {
    role: "tool",
    toolCallId: invocation.callId,
    toolName: invocation.name,
    content: completion.content,
    isError: completion.isError,
    ...(toolRoundId ? { toolRoundId } : {}),
  };
}

/** The pending round a resume runs again, as the machines take calls (docs/protocol/cursor-run.md §11). */
export function resumeRound(pending: Extract<CanonicalMessage, { role: "assistant" }>, requestId: string) {
  return pending.toolCalls.map((c) => ({
    callId: c.id,
    modelCallId: `${requestId}:resume`,
    name: c.name,
    argumentsJson: c.argumentsJson,
    args: JSON.parse(c.argumentsJson) as Record<string, unknown>,
  }));
}

/** A checkpoint the machines publish: its blobs to SET, its frames, and what the engine commits. */
export function checkpointPlan(
  kind: CheckpointKind,
  snapshots: CheckpointSnapshot[],
  messages: CanonicalMessage[],
  publish: (s: CheckpointSnapshot[]) => CheckpointPlan["publish"],
): CheckpointPlan {
  return {
    sets: snapshots.flatMap((s) => s.sets).map(({ id, data }) => ({ id, data })),
    publish: publish(snapshots),
    write: { kind, snapshots, messages },
  };
}
