// Anthropic Messages adapter: projects a ModelRequest onto `POST {baseUrl}/v1/messages` and turns the event stream
// into ModelEvents under the strict contract of docs/protocol/cursor-run.md §7.3. Endpoint quirks stay here and in
// anthropic-stream.ts.
import { AnthropicStreamDecoder } from "./anthropic-stream.js";
import { httpPost, streamModelEvents, type EventStreamRequest, type HttpPost } from "./http.js";
import { encodeBody, once } from "./request-body.js";
import type {
  ModelImage,
  ModelMessage,
  ModelRequest,
  ProviderAdapter,
  ProviderEndpoint,
  ReasoningEffort,
  ToolChoice,
  ToolDefinition,
} from "./types.js";

export const ANTHROPIC_VERSION = "2023-06-01";

/** Anthropic requires max_tokens; this is the answer allowance when the model config sets none. */
export const DEFAULT_MAX_TOKENS = 8192;

/** Thinking budget per effort (Anthropic's minimum is 1024); it is added on top of the answer allowance. */
export const THINKING_BUDGET: Record<Exclude<ReasoningEffort, "none">, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
};

export type AnthropicImageSource = { type: "base64"; media_type: string; data: string } | { type: "url"; url: string };

export type CacheControl = { type: "ephemeral" };

export type AnthropicBlock =
  | { type: "text"; text: string; cache_control?: CacheControl }
  | { type: "image"; source: AnthropicImageSource; cache_control?: CacheControl }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown>; cache_control?: CacheControl }
  | { type: "tool_result"; tool_use_id: string; content: string | AnthropicBlock[]; cache_control?: CacheControl }
  /** A thinking / redacted_thinking block replayed verbatim from this endpoint's replay state. */
  | Readonly<Record<string, unknown>>;

export type AnthropicMessage =
  | { role: "user"; content: string | AnthropicBlock[] }
  | { role: "assistant"; content: AnthropicBlock[] };

export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  system?: Array<{ type: "text"; text: string; cache_control: CacheControl }>;
  messages: AnthropicMessage[];
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  stop_sequences?: string[];
  thinking?: { type: "enabled"; budget_tokens: number };
  stream: true;
}

export type AnthropicToolChoice = { type: "auto" | "any" | "none" } | { type: "tool"; name: string };

export function createAnthropicAdapter(endpoint: ProviderEndpoint, post: HttpPost = httpPost): ProviderAdapter {
  return {
    stream: (request, signal, sink) =>
      streamModelEvents(() => messagesCall(endpoint, request), new AnthropicStreamDecoder(), signal, post, sink),
  };
}

/**
 * The request body for one call, built with a fixed key order so the same ModelRequest always serialises to the
 * same bytes and request N+1 extends request N (docs/protocol/cursor-run.md §8.1–§8.2), cache breakpoints apart
 * (markCacheBreakpoints).
 */
export function projectAnthropicRequest(request: ModelRequest): AnthropicRequest {
  const messages = markCacheBreakpoints(projectMessages(request.messages));
  const toolChoice = request.tools.length > 0 ? request.toolChoice : undefined;
  // Anthropic refuses a forced tool call (any / a named tool) together with thinking.
  const forced = toolChoice === "required" || typeof toolChoice === "object";
  const budget = forced ? undefined : thinkingBudget(request.reasoningEffort, messages);
  return {
    model: request.model,
    max_tokens: (request.maxOutputTokens ?? DEFAULT_MAX_TOKENS) + (budget ?? 0),
    ...(request.system === "" ? {} : { system: [{ type: "text", text: request.system, cache_control: EPHEMERAL }] }),
    messages,
    ...(request.tools.length > 0
      ? { tools: once(anthropicTools, request.tools, () => request.tools.map(projectTool)) }
      : {}),
    ...(toolChoice === undefined ? {} : { tool_choice: projectToolChoice(toolChoice) }),
    ...(request.stopSequences?.length ? { stop_sequences: [...request.stopSequences] } : {}),
    ...(budget === undefined ? {} : { thinking: { type: "enabled", budget_tokens: budget } }),
    stream: true,
  };
}

/** The HTTP call of one model request. */
function messagesCall(endpoint: ProviderEndpoint, request: ModelRequest): EventStreamRequest {
  return {
    url: `${endpoint.baseUrl.replace(/\/+$/, "")}/v1/messages`,
    headers: {
      "x-api-key": endpoint.apiKey,
      "anthropic-version": ANTHROPIC_VERSION,
      "content-type": "application/json",
      accept: "text/event-stream",
    },
    body: encodeBody(projectAnthropicRequest(request), "messages"),
    secret: endpoint.apiKey,
  };
}

/**
 * Tool results become tool_result blocks of the next user message, all results of one round in one message
 * (their content is the canonical string, docs/protocol/cursor-run.md §8.4). An assistant message with nothing to say
 * is left out: Anthropic rejects empty content, and consecutive user messages are merged by the API.
 */
function projectMessages(messages: readonly ModelMessage[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  let results: ToolResultMessage[] = [];
  for (const message of messages) {
    if (message.role === "tool") {
      results.push(message);
      continue;
    }
    if (results.length > 0) out.push(resultsMessage(results));
    results = [];
    const projected = once(anthropicMessages, message, () => projectMessage(message));
    if (projected.role === "user" || projected.content.length > 0) out.push(projected);
  }
  if (results.length > 0) out.push(resultsMessage(results));
  return out;
}

type ToolResultMessage = Extract<ModelMessage, { role: "tool" }>;

/** Each history message, each round's results and each mode's tool list project to one object, encoded once
 * (request-body.ts). A round's results are keyed by its first, and reused only for exactly the same results. */
const anthropicMessages = new WeakMap<ModelMessage, AnthropicMessage>();
const roundResults = new WeakMap<ModelMessage, { results: readonly ToolResultMessage[]; message: AnthropicMessage }>();
const anthropicTools = new WeakMap<readonly ToolDefinition[], AnthropicTool[]>();

function projectMessage(message: Exclude<ModelMessage, ToolResultMessage>): AnthropicMessage {
  return message.role === "user"
    ? { role: "user", content: userContent(message.content, message.images) }
    : { role: "assistant", content: projectAssistant(message) };
}

function resultsMessage(results: readonly ToolResultMessage[]): AnthropicMessage {
  const known = roundResults.get(results[0]!);
  if (known?.results.length === results.length && known.results.every((r, i) => r === results[i])) {
    return known.message;
  }
  const message: AnthropicMessage = { role: "user", content: results.map(toolResult) };
  roundResults.set(results[0]!, { results, message });
  return message;
}

function toolResult({ toolCallId, content, images }: ToolResultMessage): AnthropicBlock {
  return { type: "tool_result", tool_use_id: toolCallId, content: userContent(content, images) };
}

const EPHEMERAL: CacheControl = { type: "ephemeral" };

/**
 * Prompt caching (docs/protocol/cursor-run.md §8.1), three of the four breakpoints Anthropic allows: the system
 * prompt (tools and system), this call's last message (the prefix the next call will extend) and the last message of
 * the previous call (the one before the newest assistant turn), so this call reads the previous call's prefix at a
 * breakpoint it wrote, however many blocks the round added. Only the markers move; no content changes.
 */
function markCacheBreakpoints(messages: AnthropicMessage[]): AnthropicMessage[] {
  const previousEnd = messages.findLastIndex((m) => m.role === "assistant") - 1;
  const marked = new Set([previousEnd, messages.length - 1].filter((i) => i >= 0));
  return messages.map((message, i) => (marked.has(i) ? withBreakpoint(message) : message));
}

/** The message with cache_control on its last block that may carry one (thinking blocks and empty text may not). */
function withBreakpoint(message: AnthropicMessage): AnthropicMessage {
  const blocks: AnthropicBlock[] =
    typeof message.content === "string" ? [{ type: "text", text: message.content }] : [...message.content];
  const at = blocks.findLastIndex((b) => !isThinkingBlock(b) && !(b.type === "text" && b.text === ""));
  if (at < 0) return message;
  blocks[at] = { ...blocks[at]!, cache_control: EPHEMERAL } as AnthropicBlock;
  return { ...message, content: blocks } as AnthropicMessage;
}

/**
 * Thinking blocks come back first and unchanged, from this endpoint's own replay state only: displayable thinking
 * or another endpoint's state is never turned into a block Anthropic would have to verify (docs/protocol/cursor-run.md
 * §8.5).
 */
function projectAssistant(message: Extract<ModelMessage, { role: "assistant" }>): AnthropicBlock[] {
  const replayed = message.replay?.provider === "anthropic" ? message.replay.blocks : [];
  return [
    ...replayed,
    ...(message.text === "" ? [] : [{ type: "text" as const, text: message.text }]),
    ...message.toolCalls.map((call) => ({
      type: "tool_use" as const,
      id: call.id,
      name: call.name,
      input: JSON.parse(call.argumentsJson) as Record<string, unknown>,
    })),
  ];
}

/**
 * The thinking budget for this call, or none. Anthropic requires the assistant turn of an unfinished tool loop to
 * start with a thinking block when thinking is on; a turn produced by another endpoint has none, so that call
 * goes without thinking rather than with a forged block.
 */
function thinkingBudget(
  effort: ReasoningEffort | undefined,
  messages: readonly AnthropicMessage[],
): number | undefined {
  if (effort === undefined || effort === "none") return undefined;
  const last = messages.at(-1);
  const inToolLoop =
    last?.role === "user" && Array.isArray(last.content) && last.content.some((block) => block.type === "tool_result");
  const turn = messages.at(-2);
  if (inToolLoop && !(turn?.role === "assistant" && isThinkingBlock(turn.content[0]))) return undefined;
  return THINKING_BUDGET[effort];
}

function isThinkingBlock(block: AnthropicBlock | undefined): boolean {
  return block?.type === "thinking" || block?.type === "redacted_thinking";
}

/** A plain string unless images come along (prompts and results without images keep their bytes); images first. */
function userContent(text: string, images: readonly ModelImage[] | undefined): string | AnthropicBlock[] {
  if (!images?.length) return text;
  return [
    ...images.map((image): AnthropicBlock => ({ type: "image", source: imageSource(image) })),
    ...(text === "" ? [] : [{ type: "text" as const, text }]),
  ];
}

function imageSource(image: ModelImage): AnthropicImageSource {
  return image.type === "url"
    ? { type: "url", url: image.url }
    : { type: "base64", media_type: image.mediaType, data: image.data };
}

function projectToolChoice(choice: ToolChoice): AnthropicToolChoice {
  if (typeof choice === "object") return { type: "tool", name: choice.name };
  return { type: choice === "required" ? "any" : choice };
}

function projectTool(tool: ToolDefinition): AnthropicTool {
  return { name: tool.name, description: tool.description, input_schema: tool.parameters };
}
