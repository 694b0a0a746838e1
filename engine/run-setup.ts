// Setting a run up from its run_request (docs/protocol/cursor-run.md §1.1, §8.1–§8.2, §8.7, §11): which model and
// mode, and the history the client's checkpoint references (the runtime message is engine/run-context.ts).
import { create, fromBinary } from "@bufbuild/protobuf";
import { referencedBlobs } from "../cursor/attachments.js";
import type { TurnStart } from "../cursor/checkpoint-builder.js";
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
import { decodeRootMessage, RootMessageError } from "../cursor/root-messages.js";
import type { Store } from "../store/index.js";
import type { HistoryCache } from "./history-cache.js";
import { RunSetupError } from "./run-errors.js";

/** A new user message opens a turn; a resume continues the checkpoint's last turn (docs/protocol/cursor-run.md §2.2,
 * §11). */
export type RunAction =
  | { kind: "userMessage"; userMessage: UserMessage }
  | { kind: "resume"; turnId: Uint8Array }
  /** Background subagents finished after the parent's turn ended (docs/protocol/cursor-run.md §12.2). */
  | { kind: "backgroundCompletion"; completions: BackgroundTaskCompletion[] };

export interface RunRequestFacts {
  conversationId: string;
  state: ConversationStateStructure;
  action: RunAction;
  requestContext: RequestContext | undefined;
}

/** The parts of a run_request this slice serves; anything else is refused with a clear reason. */
export function readRunRequest(req: AgentRunRequest): RunRequestFacts {
  if (!req.conversationId) throw new RunSetupError("run_request carries no conversation_id", "invalid_argument");
  const state = req.conversationState ?? create(ConversationStateStructureSchema);
  const action = req.action?.action;
  if (action?.case === "userMessageAction" && action.value.userMessage) {
    return {
      conversationId: req.conversationId,
      state,
      action: { kind: "userMessage", userMessage: action.value.userMessage },
      requestContext: action.value.requestContext,
    };
  }
  if (action?.case === "resumeAction") {
    const turnId = state.turns[state.turns.length - 1];
    if (!turnId)
      throw new RunSetupError("resume_action with a checkpoint that has no turn to resume", "invalid_argument");
    return {
      conversationId: req.conversationId,
      state,
      action: { kind: "resume", turnId },
      requestContext: action.value.requestContext,
    };
  }
  if (action?.case === "backgroundTaskCompletionAction") {
    const completions = finishedSubagents(action.value.completions);
    return {
      conversationId: req.conversationId,
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
 * UserMessage.mode picks the assets; an action without a user message (resume) takes the checkpoint's mode. Only
 * the agent mode exists so far, and there is no silent fallback (docs/protocol/cursor-run.md §8.7).
 */
export function modeAssets(assets: PromptAssets, facts: RunRequestFacts): ModeAssets {
  const mode =
    facts.action.kind === "userMessage" ? facts.action.userMessage.mode : (facts.state.mode ?? AgentMode.UNSPECIFIED);
  if (mode !== AgentMode.UNSPECIFIED && mode !== AgentMode.AGENT) {
    throw new RunSetupError(
      `mode ${AgentMode[mode] ?? mode} is not supported by byok-gateway yet`,
      "failed_precondition",
    );
  }
  return assets.modes.get("agent")!;
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

/** The blobs the action refers to, which the client may have to send: a resumed turn, the user's attachments. */
export function actionBlobs(action: RunAction): Uint8Array[] {
  if (action.kind === "resume") return [action.turnId];
  return action.kind === "userMessage" ? referencedBlobs(action.userMessage) : [];
}

/** The turn the run writes: a new one for a user message or a completion, the last one for a resume. */
export async function turnStart(store: Store, action: RunAction): Promise<TurnStart> {
  if (action.kind === "userMessage") return { kind: "new", userMessage: action.userMessage };
  if (action.kind === "backgroundCompletion")
    return { kind: "new", userMessage: completionUserMessage(action.completions) };
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

const hex = (id: Uint8Array) => Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString("hex");

/** The checkpoint's root ids as the history cache keys them. */
export function rootIds(state: ConversationStateStructure): string[] {
  return state.rootPromptMessagesJson.map(hex);
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
