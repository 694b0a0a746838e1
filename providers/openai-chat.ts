// OpenAI Chat Completions adapter (also OpenAI-compatible endpoints: DeepSeek, xAI, Z.ai, OpenRouter, Groq):
// projects a ModelRequest onto `POST {baseUrl}/chat/completions` and turns the SSE chunks into ModelEvents
// under the strict contract of docs/protocol/cursor-run.md §7.3. Endpoint quirks stay in this file and
// openai-chat-stream.ts.
import { httpPost, streamModelEvents, type EventStreamRequest, type HttpPost } from "./http.js";
import { imageUrl } from "./images.js";
import { ChatStreamDecoder } from "./openai-chat-stream.js";
import { encodeBody, once } from "./request-body.js";
import type {
  ModelImage,
  ModelMessage,
  ModelRequest,
  ModelToolCall,
  ProviderAdapter,
  ProviderEndpoint,
  ReasoningEffort,
  ToolChoice,
  ToolDefinition,
} from "./types.js";

export type ChatContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ChatContentPart[] }
  | { role: "assistant"; content: string | null; reasoning_content?: string; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export type ChatToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  stop?: string[];
  max_completion_tokens?: number;
  reasoning_effort?: ReasoningEffort;
  prompt_cache_key?: string;
  stream: true;
  stream_options: { include_usage: true };
}

export function createOpenAIChatAdapter(endpoint: ProviderEndpoint, post: HttpPost = httpPost): ProviderAdapter {
  return {
    stream: (request, signal, sink) =>
      streamModelEvents(() => chatCompletionCall(endpoint, request), new ChatStreamDecoder(), signal, post, sink),
  };
}

/**
 * The request body for one call. Every object is built with a fixed key order and tool parameters keep the
 * order they were authored in, so the same ModelRequest always serialises to the same bytes
 * (docs/protocol/cursor-run.md §8.1–§8.2).
 */
export function projectChatRequest(request: ModelRequest): ChatCompletionRequest {
  return {
    model: request.model,
    messages: [{ role: "system", content: request.system }, ...projectMessages(request.messages)],
    ...(request.tools.length > 0
      ? { tools: once(chatTools, request.tools, () => request.tools.map(projectTool)) }
      : {}),
    // The API refuses a tool_choice without tools.
    ...(request.toolChoice === undefined || request.tools.length === 0
      ? {}
      : { tool_choice: projectToolChoice(request.toolChoice) }),
    ...(request.stopSequences?.length ? { stop: [...request.stopSequences] } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { max_completion_tokens: request.maxOutputTokens }),
    // Sent only when the client asked: models without reasoning reject the field.
    ...(request.reasoningEffort === undefined ? {} : { reasoning_effort: request.reasoningEffort }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    stream: true,
    stream_options: { include_usage: true },
  };
}

/** The HTTP call of one model request. */
function chatCompletionCall(endpoint: ProviderEndpoint, request: ModelRequest): EventStreamRequest {
  return {
    url: chatCompletionsUrl(endpoint),
    headers: {
      ...authorization(endpoint),
      "content-type": "application/json",
      accept: "text/event-stream",
    },
    body: encodeBody(projectChatRequest(request), "messages"),
    secret: endpoint.apiKey,
  };
}

/** `{baseUrl}/chat/completions`; an Azure deployment's base URL also takes the api-version query. */
function chatCompletionsUrl(endpoint: ProviderEndpoint): string {
  const url = `${endpoint.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  return endpoint.azureApiVersion === undefined
    ? url
    : `${url}?api-version=${encodeURIComponent(endpoint.azureApiVersion)}`;
}

function authorization(endpoint: ProviderEndpoint): Record<string, string> {
  return endpoint.azureApiVersion === undefined
    ? { authorization: `Bearer ${endpoint.apiKey}` }
    : { "api-key": endpoint.apiKey };
}

/** Each history message and each mode's tool list projects to one object, encoded once (request-body.ts). */
const chatMessages = new WeakMap<ModelMessage, ChatMessage>();
const chatTools = new WeakMap<readonly ToolDefinition[], ChatTool[]>();

/**
 * Chat's tool messages carry text only: the images of a round's tool results follow its last result as one user
 * message (tool messages must come right after the assistant's calls, so they cannot go in between).
 */
function projectMessages(messages: readonly ModelMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let toolImages: ModelImage[] = [];
  messages.forEach((message, i) => {
    out.push(once(chatMessages, message, () => projectMessage(message)));
    if (message.role === "tool") toolImages.push(...(message.images ?? []));
    if (toolImages.length > 0 && messages[i + 1]?.role !== "tool") {
      out.push({ role: "user", content: userContent("", toolImages) });
      toolImages = [];
    }
  });
  return out;
}

function projectMessage(message: ModelMessage): ChatMessage {
  switch (message.role) {
    case "user":
      return { role: "user", content: userContent(message.content, message.images) };
    case "tool":
      // ToolResult content is already the one canonical string (docs/protocol/cursor-run.md §8.4).
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant":
      return projectAssistant(message);
  }
}

/** A plain string unless images come along (Cursor's prompts stay byte for byte what they were). */
function userContent(text: string, images: readonly ModelImage[] | undefined): string | ChatContentPart[] {
  if (!images?.length) return text;
  return [
    ...images.map((image): ChatContentPart => ({ type: "image_url", image_url: { url: imageUrl(image) } })),
    ...(text === "" ? [] : [{ type: "text" as const, text }]),
  ];
}

function projectToolChoice(choice: ToolChoice): ChatToolChoice {
  return typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
}

/**
 * reasoning_content is replayed only from this endpoint's own replay state and only when it holds text:
 * never from displayable thinking, never from another endpoint, never as an empty substitute
 * (docs/protocol/cursor-run.md §8.5).
 */
function projectAssistant(message: Extract<ModelMessage, { role: "assistant" }>): ChatMessage {
  const reasoning = message.replay?.provider === "openai-chat" ? message.replay.reasoningContent : undefined;
  return {
    role: "assistant",
    content: message.text === "" ? null : message.text,
    ...(reasoning === undefined || reasoning === "" ? {} : { reasoning_content: reasoning }),
    // An empty tool_calls array is rejected by the API; a text-only answer has no such key at all.
    ...(message.toolCalls.length > 0 ? { tool_calls: message.toolCalls.map(projectToolCall) } : {}),
  };
}

function projectToolCall(call: ModelToolCall): ChatToolCall {
  return { id: call.id, type: "function", function: { name: call.name, arguments: call.argumentsJson } };
}

function projectTool(tool: ToolDefinition): ChatTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
