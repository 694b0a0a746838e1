// Setting a run up from its run_request (seed 003 §12, §17.1, §23, §25): which model and mode, the history the
// client's checkpoint references, and the one runtime user message of this run, appended exactly once.
import { create } from "@bufbuild/protobuf";
import {
  AgentMode,
  ConversationStateStructureSchema,
  type AgentRunRequest,
  type ConversationStateStructure,
  type RequestContext,
  type UserMessage,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeAssets, PromptAssets } from "../prompt/assets.js";
import { formatRequestContext, renderRuntime } from "../prompt/render.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { decodeRootMessage, RootMessageError } from "../transport/cursor/root-messages.js";
import type { Store } from "../store/index.js";
import { RunSetupError } from "./run-errors.js";

export interface RunRequestFacts {
  conversationId: string;
  state: ConversationStateStructure;
  userMessage: UserMessage;
  requestContext: RequestContext | undefined;
}

/** The parts of a run_request this slice serves; anything else is refused with a clear reason. */
export function readRunRequest(req: AgentRunRequest): RunRequestFacts {
  if (!req.conversationId) throw new RunSetupError("run_request carries no conversation_id", "invalid_argument");
  const action = req.action?.action;
  if (action?.case !== "userMessageAction" || !action.value.userMessage) {
    throw new RunSetupError(`conversation action ${JSON.stringify(action?.case ?? "none")} is not supported by byok-gateway yet`, "failed_precondition");
  }
  return {
    conversationId: req.conversationId,
    state: req.conversationState ?? create(ConversationStateStructureSchema),
    userMessage: action.value.userMessage,
    requestContext: action.value.requestContext,
  };
}

/** UserMessage.mode picks the assets; only the agent mode exists so far, and there is no silent fallback (003 §25). */
export function modeAssets(assets: PromptAssets, userMessage: UserMessage): ModeAssets {
  if (userMessage.mode !== AgentMode.UNSPECIFIED && userMessage.mode !== AgentMode.AGENT) {
    throw new RunSetupError(`mode ${AgentMode[userMessage.mode] ?? userMessage.mode} is not supported by byok-gateway yet`, "failed_precondition");
  }
  return assets.modes.get("agent")!;
}

/** Decodes the checkpoint's model transcript; the first root must be the one system prompt (003 §3, §9). */
export async function loadHistory(store: Store, state: ConversationStateStructure): Promise<CanonicalMessage[]> {
  const blobs = await store.getBlobs(state.rootPromptMessagesJson);
  const messages: CanonicalMessage[] = [];
  for (const [i, bytes] of blobs.entries()) {
    if (!bytes) throw new RunSetupError(`checkpoint root ${i} is neither stored nor provided by the client`, "invalid_argument");
    try {
      messages.push(decodeRootMessage(bytes));
    } catch (e) {
      if (e instanceof RootMessageError) throw new RunSetupError(`checkpoint root ${i}: ${e.message}`, "invalid_argument");
      throw e;
    }
  }
  if (messages.length > 0 && (messages[0]!.role !== "system" || messages.slice(1).some((m) => m.role === "system"))) {
    throw new RunSetupError("checkpoint history must start with exactly one system prompt root", "invalid_argument");
  }
  return messages.slice(1);
}

/** The run's single runtime user message, rendered once; a replay of the same request gets the stored bytes. */
export async function appendRuntimeMessage(
  store: Store,
  facts: RunRequestFacts,
  requestId: string,
  mode: ModeAssets,
  now: Date,
): Promise<CanonicalMessage> {
  const env = facts.requestContext?.env;
  const content = renderRuntime(mode.runtimeTemplate, {
    requestContext: formatRequestContext({
      ...(env ? { os: env.osVersion, shell: env.shell, workspacePaths: env.workspacePaths, terminalsFolder: env.terminalsFolder, timeZone: env.timeZone } : {}),
      rules: (facts.requestContext?.rules ?? []).map((r) => r.content),
    }),
    timestamp: now.toISOString(),
    userQuery: facts.userMessage.text,
  });
  const eventId = `run-request:${requestId}`;
  const message: CanonicalMessage = { role: "user", content, origin: "runtime", eventId };
  const stored = await store.appendRuntimeMessageOnce(facts.conversationId, requestId, eventId, JSON.stringify(message));
  return JSON.parse(stored.body) as CanonicalMessage;
}
