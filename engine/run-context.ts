// What a run_request brings into the model's context besides its history (docs/protocol/cursor-run.md §2.3, §2.6,
// §8.7, §8.8, §12.1): the edited message's anchor, the client's pre-fetched and referenced blobs, the request context
// and the attachments, rendered once into the run's runtime message; and what is refused or not used yet.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type AgentRunRequest,
  type ConversationAction,
  ConversationActionSchema,
  ConversationStateStructureSchema,
  type RequestContext,
  RequestContextSchema,
  type UserMessage,
  UserMessageActionSchema,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeAssets } from "../prompt/assets.js";
import { formatRequestContext, type RequestContextParts, renderRuntime } from "../prompt/render.js";
import {
  imageBlobs,
  referencedBlobs,
  renderAttachments,
  selectedImages,
  setFields,
  textAttachments,
  unusedContext,
  userQuery,
} from "../cursor/attachments.js";
import { effectiveRequestContext, partReferences, RequestContextPartError } from "../cursor/request-context.js";
import type { CanonicalMessage, InlineImage } from "../providers/messages.js";
import type { Logger } from "../log/logger.js";
import { BlobIntegrityError, type Store } from "../store/index.js";
import { hexId } from "../cursor/blob-graph.js";
import { RunSetupError } from "./run-errors.js";
import type { RunRequestFacts } from "./run-setup.js";

export interface ContextDeps {
  store: Store;
  log: Logger;
}

/** The run's first commit (store.beginRun), told the user message to anchor; returns that message's anchor. */
export type BeginRun = (
  input: { messageId: string; baseState: Uint8Array } | undefined,
) => Promise<Uint8Array | undefined>;

/**
 * Before anything is fetched: attached images are refused when the model takes none (`takesImages`, config
 * `images`), the run's first commit moves an edited message onto its anchor, and the pre-fetched blobs are stored.
 */
export async function admitRequest(
  deps: ContextDeps,
  facts: RunRequestFacts,
  request: AgentRunRequest,
  requestId: string,
  takesImages: boolean,
  begin: BeginRun,
): Promise<RunRequestFacts> {
  if (facts.action.kind === "userMessage" && !takesImages)
    refuseImages(facts.action.userMessage, request.requestedModel?.modelId ?? "");
  const anchored = await anchoredFacts(begin, facts);
  if (anchored !== facts) {
    deps.log.info("edited message branches from its anchor", {
      request_id: requestId,
      conversation_id: facts.conversationId,
      turns: anchored.state.turns.length,
      abandoned_turns: facts.state.turns.length - anchored.state.turns.length,
    });
  }
  await storePreFetched(deps.store, request);
  return anchored;
}

/**
 * An edited message — its message_id seen before in this conversation — is built on the checkpoint it was first sent
 * on, whatever later checkpoint the client sends: the history is cut back to the message's anchor and the abandoned
 * branch stays in the store until garbage collection (docs/protocol/cursor-run.md §12.1).
 */
async function anchoredFacts(begin: BeginRun, facts: RunRequestFacts): Promise<RunRequestFacts> {
  const messageId = facts.action.kind === "userMessage" ? facts.action.userMessage.messageId : "";
  const sent = messageId ? toBinary(ConversationStateStructureSchema, facts.state) : undefined;
  const base = await begin(sent && { messageId, baseState: sent });
  if (!base || !sent || Buffer.from(base).equals(sent)) return facts;
  return { ...facts, state: fromBinary(ConversationStateStructureSchema, base) };
}

/** pre_fetched_blobs are stored like fetched ones, after the same SHA-256 check (docs/protocol/cursor-run.md §3.3). */
async function storePreFetched(store: Store, req: AgentRunRequest): Promise<void> {
  if (req.preFetchedBlobs.length === 0) return;
  try {
    await store.putBlobs(req.preFetchedBlobs.map((b) => ({ id: b.id, data: b.value })));
  } catch (e) {
    if (e instanceof BlobIntegrityError) throw new RunSetupError(`pre_fetched_blobs: ${e.message}`, "invalid_argument");
    throw e;
  }
}

/** The request_context_parts blobs (docs/protocol/cursor-run.md §2.6); the run fetches the ones the store lacks. */
export function requestContextBlobs(request: AgentRunRequest): Uint8Array[] {
  return partReferences(request.action?.requestContextParts).map((p) => p.blobId);
}

/** Once the part blobs are stored: the request context the run renders, with the parts decoded into it. */
export async function compileRequestContext(
  store: Store,
  facts: RunRequestFacts,
  request: AgentRunRequest,
): Promise<RunRequestFacts> {
  const refs = request.action?.requestContextParts;
  const ids = requestContextBlobs(request);
  const stored = await store.getBlobs(ids);
  const bytes = new Map(ids.map((id, i) => [hexId(id), stored[i]]));
  try {
    const requestContext = effectiveRequestContext(facts.requestContext, refs, (id) => bytes.get(hexId(id)));
    return { ...facts, requestContext };
  } catch (e) {
    if (e instanceof RequestContextPartError) throw new RunSetupError(e.message, "invalid_argument");
    throw e;
  }
}

/** A model configured without images is named, rather than the image dropped or the provider left to fail. */
function refuseImages(userMessage: UserMessage, modelId: string): void {
  const [first, ...more] = selectedImages(userMessage);
  if (!first) return;
  const what = more.length ? `${more.length + 1} attached images` : `the attached image ${first.path || "(unnamed)"}`;
  throw new RunSetupError(
    `model ${JSON.stringify(modelId)} cannot take ${what}: it is configured with images: false`,
    "invalid_argument",
  );
}

/** The attached images as the history stores them: their bytes, inline or from their (stored or fetched) blob. */
async function attachedImages(store: Store, userMessage: UserMessage): Promise<InlineImage[]> {
  const ids = imageBlobs(userMessage);
  const stored = await store.getBlobs(ids);
  const byId = new Map(ids.map((id, i) => [hexId(id), stored[i]]));
  return selectedImages(userMessage).map((image, i) => {
    const name = image.path || `#${i + 1}`;
    const bytes = image.data ?? (image.blobId ? byId.get(hexId(image.blobId)) : undefined);
    if (!bytes) throw new RunSetupError(`attached image ${name} has neither data nor a known blob`, "invalid_argument");
    if (!image.mimeType) throw new RunSetupError(`attached image ${name} has no mime_type`, "invalid_argument");
    return { type: "base64", mediaType: image.mimeType, data: Buffer.from(bytes).toString("base64") };
  });
}

/** The text of each blob the user message refers to (stored or just fetched), read as UTF-8. */
async function attachmentBlobs(store: Store, userMessage: UserMessage): Promise<(id: Uint8Array) => string> {
  const ids = referencedBlobs(userMessage);
  const texts = new Map<string, string>();
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const blobs = await store.getBlobs(ids);
  blobs.forEach((bytes, i) => {
    const key = hexId(ids[i]!);
    if (!bytes) throw new RunSetupError(`attachment blob ${key} is neither stored nor provided`, "invalid_argument");
    try {
      texts.set(key, decoder.decode(bytes));
    } catch {
      throw new RunSetupError(`attachment blob ${key} is not UTF-8 text`, "invalid_argument");
    }
  });
  return (id) => texts.get(hexId(id))!;
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
      .map((r) =>
        [
          `Repository: ${r.path}`,
          ...(r.branchName ? [`Branch: ${r.branchName}`] : []),
          ...(r.status ? [r.status] : []),
        ].join("\n"),
      )
      .join("\n\n"),
    rules: [...ctx.rules, ...ctx.nonFileRules].map((r) => r.content).concat(ctx.cloudRule ? [ctx.cloudRule] : []),
    skills: ctx.agentSkills.map((k) => `${k.fullPath}: ${k.description}`),
    subagents: ctx.customSubagents.map((a) => `${a.name}: ${a.description}`),
    mcpInstructions: ctx.mcpInstructions.map((m) => ({ server: m.serverName, instructions: m.instructions })),
  };
}

/** RequestContext fields the runtime message uses; others present are reported once as unused. */
const REQUEST_CONTEXT_USED = new Set([
  "env",
  "rules",
  "non_file_rules",
  "cloud_rule",
  "git_repos",
  "agent_skills",
  "custom_subagents",
  "mcp_instructions",
  // The MCP tools, offered to the model when the run request's own mcp_tools are empty (engine/run-mode.ts).
  "tools",
]);

const ACTION_USED = new Set(["user_message", "request_context"]);

/** What the request carries that the gateway does not use yet, by field name (docs/protocol/cursor-run.md §2.6). */
function unusedRequestFields(facts: RunRequestFacts, action: ConversationAction | undefined): string[] {
  const ctx = facts.requestContext;
  return [
    ...(action ? setFields(ConversationActionSchema, action, () => false, "action") : []),
    ...(action?.action.case === "userMessageAction"
      ? setFields(UserMessageActionSchema, action.action.value, (n) => !ACTION_USED.has(n), "user_message_action")
      : []),
    ...(facts.action.kind === "userMessage" ? unusedContext(facts.action.userMessage) : []),
    ...(ctx ? setFields(RequestContextSchema, ctx, (n) => !REQUEST_CONTEXT_USED.has(n), "request_context") : []),
  ];
}

/**
 * The run's single runtime user message, rendered once; a replay of the same request gets the stored bytes. What
 * the request carries that is not used yet is named in one info line.
 */
export async function appendRuntimeMessage(
  deps: ContextDeps,
  facts: RunRequestFacts,
  userMessage: UserMessage,
  request: AgentRunRequest,
  requestId: string,
  mode: ModeAssets,
  /** The run's first provider call, persisted with the message (docs/protocol/cursor-run.md §6.5). */
  firstCallIndex: number,
): Promise<CanonicalMessage> {
  const unused = unusedRequestFields(facts, request.action);
  if (unused.length) deps.log.info("request context not used yet", { request_id: requestId, unused });
  const blobText = await attachmentBlobs(deps.store, userMessage);
  const content = renderRuntime(mode.runtimeTemplate, {
    requestContext: formatRequestContext(requestContextParts(facts.requestContext)),
    selectedContext: renderAttachments(textAttachments(userMessage, blobText)),
    ...(facts.action.kind === "userMessage" && facts.action.actionContext
      ? { actionContext: facts.action.actionContext }
      : {}),
    timestamp: new Date().toISOString(),
    userQuery: userQuery(userMessage, blobText),
  });
  const images = await attachedImages(deps.store, userMessage);
  const eventId = `run-request:${requestId}`;
  const message: CanonicalMessage = {
    role: "user",
    content,
    origin: "runtime",
    eventId,
    ...(images.length ? { images } : {}),
  };
  const stored = await deps.store.appendRuntimeMessageOnce(
    facts.conversationId,
    requestId,
    eventId,
    JSON.stringify(message),
    firstCallIndex,
  );
  return JSON.parse(stored.body) as CanonicalMessage;
}

/** What the projected history is made of, for the checkpoint's context breakdown (docs/protocol/cursor-run.md §9). */
export interface ProjectedParts {
  rules: string;
  skills: string;
  mcp: string;
  subagents: string;
  /** UTF-16 length of everything else. */
  conversationCharacters: number;
}

const SECTION_TAGS = { rules: "rules", skills: "skills", mcp: "mcp_instructions", subagents: "subagents" } as const;

/** Compiled once: every run folds its whole history through addProjected. */
const SECTIONS = Object.entries(SECTION_TAGS).map(
  ([key, tag]) => [key, new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`)] as [keyof typeof SECTION_TAGS, RegExp],
);

/** Adds `m` to `parts`, in place (a run folds its whole history): rules, skills, MCP instructions and subagents
 * ride in the runtime messages' sections of those names (§8.7); everything else projected counts as conversation. */
export function addProjected(parts: ProjectedParts, m: CanonicalMessage): void {
  if (m.role !== "user" || m.origin !== "runtime") {
    parts.conversationCharacters += projectedLength(m);
    return;
  }
  parts.conversationCharacters += m.content.length;
  for (const [key, section] of SECTIONS) {
    const text = section.exec(m.content)?.[1] ?? "";
    parts[key] += text;
    parts.conversationCharacters -= text.length;
  }
}

/** The UTF-16 length of what a message projects: an assistant's text, thinking and tool arguments, else its content. */
function projectedLength(m: CanonicalMessage): number {
  if (m.role !== "assistant") return m.content.length;
  let length = m.text.length + (m.thinking?.length ?? 0);
  for (const call of m.toolCalls) length += call.argumentsJson.length;
  return length;
}

/**
 * A local run's first commit (store.beginRun): its run row with the conversation's route (the router keeps it in
 * memory at once; it becomes durable with the run, docs/performance.md) and the anchor of its user message.
 * `claimed` runs once the row is this execution's.
 */
export function localRunStart(
  store: Store,
  run: { runId: string; conversationId: string; model: string; modelId: string },
  claimed: () => void,
): BeginRun {
  return async (input) => {
    const { runId, conversationId, model, modelId } = run;
    const anchor = await store.beginRun({
      runId,
      conversationId,
      model,
      route: { route: "local", modelId },
      ...(input ? { input } : {}),
    });
    claimed();
    return anchor;
  };
}
