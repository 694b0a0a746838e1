// Setting a run up from its run_request (docs/protocol/cursor-run.md §1.1, §8.1–§8.2, §8.6, §8.7): which model and
// mode, the history the client's checkpoint references, and the one runtime user message of this run, appended exactly
// once.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  AgentMode,
  type ConversationAction,
  ConversationActionSchema,
  RequestContextSchema,
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
  type ConversationTurnStructure,
  type AgentRunRequest,
  type ConversationStateStructure,
  type RequestContext,
  type UserMessage,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeAssets, PromptAssets } from "../prompt/assets.js";
import { formatRequestContext, type RequestContextParts, renderRuntime } from "../prompt/render.js";
import {
  referencedBlobs,
  renderAttachments,
  selectedImages,
  setFields,
  textAttachments,
  unusedContext,
  userQuery,
} from "../cursor/attachments.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { decodeRootMessage, RootMessageError } from "../cursor/root-messages.js";
import { BlobIntegrityError, type Store } from "../store/index.js";
import type { HistoryCache } from "./history-cache.js";
import { RunSetupError } from "./run-errors.js";

/** A new user message opens a turn; a resume continues the checkpoint's last turn (docs/protocol/cursor-run.md §2.2,
 * §11). */
export type RunAction = { kind: "userMessage"; userMessage: UserMessage } | { kind: "resume"; turnId: Uint8Array };

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
  throw new RunSetupError(
    `conversation action ${JSON.stringify(action?.case ?? "none")} is not supported by byok-gateway yet`,
    "failed_precondition",
  );
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

/**
 * An edited message — its message_id seen before in this conversation — is built on the checkpoint it was first sent
 * on, whatever later checkpoint the client sends: the history is cut back to the message's anchor and the abandoned
 * branch stays in the store until garbage collection (docs/protocol/cursor-run.md §12.1).
 */
export async function anchoredFacts(store: Store, facts: RunRequestFacts): Promise<RunRequestFacts> {
  if (facts.action.kind !== "userMessage" || !facts.action.userMessage.messageId) return facts;
  const sent = toBinary(ConversationStateStructureSchema, facts.state);
  const base = await store.anchorInput(facts.conversationId, facts.action.userMessage.messageId, sent);
  if (Buffer.from(base).equals(sent)) return facts;
  return { ...facts, state: fromBinary(ConversationStateStructureSchema, base) };
}

/** pre_fetched_blobs are stored like fetched ones, after the same SHA-256 check (docs/protocol/cursor-run.md §3.3). */
export async function storePreFetched(store: Store, req: AgentRunRequest): Promise<void> {
  if (req.preFetchedBlobs.length === 0) return;
  try {
    await store.putBlobs(req.preFetchedBlobs.map((b) => ({ id: b.id, data: b.value })));
  } catch (e) {
    if (e instanceof BlobIntegrityError) throw new RunSetupError(`pre_fetched_blobs: ${e.message}`, "invalid_argument");
    throw e;
  }
}

/** Images reach no provider yet; refusing names the model rather than dropping what the user attached. */
export function refuseImages(userMessage: UserMessage, modelId: string): void {
  const [first, ...more] = selectedImages(userMessage);
  if (!first) return;
  const what = more.length ? `${more.length + 1} attached images` : `the attached image ${first.path || "(unnamed)"}`;
  throw new RunSetupError(
    `model ${JSON.stringify(modelId)} cannot take ${what}: byok-gateway does not send images to providers yet`,
    "invalid_argument",
  );
}

/** The text of each blob the user message refers to (stored or just fetched), read as UTF-8. */
export async function attachmentBlobs(store: Store, userMessage: UserMessage): Promise<(id: Uint8Array) => string> {
  const ids = referencedBlobs(userMessage);
  const texts = new Map<string, string>();
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const blobs = await store.getBlobs(ids);
  blobs.forEach((bytes, i) => {
    const key = hex(ids[i]!);
    if (!bytes) throw new RunSetupError(`attachment blob ${key} is neither stored nor provided`, "invalid_argument");
    try {
      texts.set(key, decoder.decode(bytes));
    } catch {
      throw new RunSetupError(`attachment blob ${key} is not UTF-8 text`, "invalid_argument");
    }
  });
  return (id) => texts.get(hex(id))!;
}

/** The request context compiled into the runtime message (docs/protocol/cursor-run.md §8.7 order). */
function requestContextParts(ctx: RequestContext | undefined): RequestContextParts {
  if (!ctx) return {};
  const env = ctx.env;
  return {
    ...(env
      ? {
          os: env.osVersion,
          shell: env.shell,
          workspacePaths: env.workspacePaths,
          terminalsFolder: env.terminalsFolder,
          timeZone: env.timeZone,
        }
      : {}),
    gitStatus: ctx.gitRepos
      .map((r) => [`Repository: ${r.path}`, ...(r.branchName ? [`Branch: ${r.branchName}`] : []), r.status].join("\n"))
      .join("\n\n"),
    rules: ctx.rules.map((r) => r.content),
    skills: ctx.agentSkills.map((k) => `${k.fullPath}: ${k.description}`),
    subagents: ctx.customSubagents.map((a) => `${a.name}: ${a.description}`),
    mcpInstructions: ctx.mcpInstructions.map((m) => ({ server: m.serverName, instructions: m.instructions })),
  };
}

/** RequestContext fields the runtime message uses; others present are reported once as unused. */
const REQUEST_CONTEXT_USED = new Set([
  "env",
  "rules",
  "git_repos",
  "agent_skills",
  "custom_subagents",
  "mcp_instructions",
]);

/** What the request carries that the gateway does not use yet, by field name (docs/protocol/cursor-run.md §2.6). */
export function unusedRequestFields(facts: RunRequestFacts, action: ConversationAction | undefined): string[] {
  const ctx = facts.requestContext;
  return [
    ...(action ? setFields(ConversationActionSchema, action, () => false, "action") : []),
    ...(facts.action.kind === "userMessage" ? unusedContext(facts.action.userMessage) : []),
    ...(ctx ? setFields(RequestContextSchema, ctx, (n) => !REQUEST_CONTEXT_USED.has(n), "request_context") : []),
  ];
}

/** The run's single runtime user message, rendered once; a replay of the same request gets the stored bytes. */
export async function appendRuntimeMessage(
  store: Store,
  facts: RunRequestFacts,
  userMessage: UserMessage,
  blobText: (id: Uint8Array) => string,
  requestId: string,
  mode: ModeAssets,
  now: Date,
): Promise<CanonicalMessage> {
  const content = renderRuntime(mode.runtimeTemplate, {
    requestContext: formatRequestContext(requestContextParts(facts.requestContext)),
    selectedContext: renderAttachments(textAttachments(userMessage, blobText)),
    timestamp: now.toISOString(),
    userQuery: userQuery(userMessage, blobText),
  });
  const eventId = `run-request:${requestId}`;
  const message: CanonicalMessage = { role: "user", content, origin: "runtime", eventId };
  const stored = await store.appendRuntimeMessageOnce(
    facts.conversationId,
    requestId,
    eventId,
    JSON.stringify(message),
  );
  return JSON.parse(stored.body) as CanonicalMessage;
}
