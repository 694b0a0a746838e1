// OpenAI Responses API adapter: projects a ModelRequest onto `POST {baseUrl}/responses` and turns the event stream
// into ModelEvents (openai-responses-stream.ts). Every call sends the whole conversation with `store: false`, never
// previous_response_id (docs/protocol/cursor-run.md §7.3); reasoning continues through the encrypted reasoning items
// this endpoint returned, replayed verbatim from its own replay state and never fabricated from another endpoint's
// (docs/protocol/cursor-run.md §8.5).
import { httpPost, streamModelEvents, type EventStreamRequest, type HttpPost } from "./http.js";
import { imageUrl } from "./images.js";
import { ResponsesStreamDecoder } from "./openai-responses-stream.js";
import { encodeBody, once } from "./request-body.js";
import {
  ProviderError,
  type ModelImage,
  type ModelMessage,
  type ModelRequest,
  type ReasoningEffort,
  type ToolChoice,
  type ModelToolCall,
  type ProviderAdapter,
  type ProviderEndpoint,
  type ToolDefinition,
} from "./types.js";

/** An output item of an earlier response, sent back exactly as `output_item.done` carried it. */
export type ReplayedItem = Readonly<Record<string, unknown>>;

export type ResponsesInputContent =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string; detail: "auto" };

export type ResponsesInputItem =
  | { role: "user"; content: string | ResponsesInputContent[] }
  | { type: "message"; role: "assistant"; content: [{ type: "output_text"; text: string }] }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string | ResponsesInputContent[] }
  | ReplayedItem;

export interface ResponsesTool {
  type: "function";
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The Responses API defaults to strict schemas, which agent tool schemas (optional fields) do not meet. */
  strict: false;
}

export type ResponsesToolChoice = "auto" | "none" | "required" | { type: "function"; name: string };

export interface ResponsesRequest {
  model: string;
  instructions: string;
  input: ResponsesInputItem[];
  tools?: ResponsesTool[];
  tool_choice?: ResponsesToolChoice;
  max_output_tokens?: number;
  /** Only when the client asked for an effort: models without reasoning reject the field. */
  reasoning?: { effort: ReasoningEffort; summary: "auto" };
  prompt_cache_key?: string;
  /** Without it a `store: false` response's reasoning cannot be carried into the next call. */
  include: ["reasoning.encrypted_content"];
  store: false;
  stream: true;
}

export function createOpenAIResponsesAdapter(endpoint: ProviderEndpoint, post: HttpPost = httpPost): ProviderAdapter {
  return {
    stream: (request, signal, sink) =>
      streamModelEvents(() => responsesCall(endpoint, request), new ResponsesStreamDecoder(), signal, post, sink),
  };
}

/**
 * The request body for one call. Objects are built in a fixed key order and replayed items are passed through
 * untouched, so the same ModelRequest always serialises to the same bytes and history only ever grows at the end.
 */
export function projectResponsesRequest(request: ModelRequest): ResponsesRequest {
  // Responses has no stop sequences: refused like an unknown parameter, never silently dropped.
  if (request.stopSequences?.length) {
    throw new ProviderError("stop sequences are not supported by the OpenAI Responses API", "error", 400);
  }
  return {
    model: request.model,
    instructions: request.system,
    input: request.messages.flatMap((message) => once(inputItems, message, () => projectMessage(message))),
    ...(request.tools.length > 0
      ? { tools: once(responsesTools, request.tools, () => request.tools.map(projectTool)) }
      : {}),
    ...(request.toolChoice === undefined || request.tools.length === 0
      ? {}
      : { tool_choice: projectToolChoice(request.toolChoice) }),
    ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens }),
    ...(request.reasoningEffort === undefined
      ? {}
      : { reasoning: { effort: request.reasoningEffort, summary: "auto" as const } }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    include: ["reasoning.encrypted_content"],
    store: false,
    stream: true,
  };
}

/** The HTTP call of one model request. */
function responsesCall(endpoint: ProviderEndpoint, request: ModelRequest): EventStreamRequest {
  return {
    url: `${endpoint.baseUrl.replace(/\/+$/, "")}/responses`,
    headers: {
      authorization: `Bearer ${endpoint.apiKey}`,
      "content-type": "application/json",
      accept: "text/event-stream",
    },
    body: encodeBody(projectResponsesRequest(request), "input"),
    secret: endpoint.apiKey,
  };
}

/** Each history message and each mode's tool list projects to one object, encoded once (request-body.ts). */
const inputItems = new WeakMap<ModelMessage, ResponsesInputItem[]>();
const responsesTools = new WeakMap<readonly ToolDefinition[], ResponsesTool[]>();

function projectMessage(message: ModelMessage): ResponsesInputItem[] {
  switch (message.role) {
    case "user":
      return [{ role: "user", content: userContent(message.content, message.images) }];
    case "tool":
      // ToolResult content is already the one canonical string (docs/protocol/cursor-run.md §8.4).
      // A function's output may hold images as input content; text-only output stays the canonical string.
      return [
        {
          type: "function_call_output",
          call_id: message.toolCallId,
          output: message.images?.length ? inputContent(message.content, message.images) : message.content,
        },
      ];
    case "assistant":
      return message.replay?.provider === "openai-responses"
        ? replayedItems(message.replay.items, message.toolCalls)
        : plainAssistant(message);
  }
}

/**
 * This endpoint's own output items go back whole: reasoning with the encrypted_content of `output_item.done`,
 * messages with their `phase`, calls with their original argument bytes. Their calls must be exactly the canonical
 * ones (whose results follow), or the request would carry a dangling or unanswered call.
 */
function replayedItems(items: readonly ReplayedItem[], toolCalls: readonly ModelToolCall[]): ReplayedItem[] {
  const replayedCalls = items.filter((item) => item.type === "function_call").map((item) => item.call_id);
  const canonicalCalls = toolCalls.map((call) => call.id);
  if (JSON.stringify(replayedCalls) !== JSON.stringify(canonicalCalls)) {
    throw new ProviderError(
      `openai-responses replay state holds calls ${JSON.stringify(replayedCalls)} but the assistant message has ${JSON.stringify(canonicalCalls)}`,
      "error",
    );
  }
  return [...items];
}

/** An assistant turn from another endpoint (or none): its visible text and calls, without foreign replay state. */
function plainAssistant(message: Extract<ModelMessage, { role: "assistant" }>): ResponsesInputItem[] {
  return [
    ...(message.text === "" ? [] : [assistantText(message.text)]),
    ...message.toolCalls.map(
      (call): ResponsesInputItem => ({
        type: "function_call",
        call_id: call.id,
        name: call.name,
        arguments: call.argumentsJson,
      }),
    ),
  ];
}

function assistantText(text: string): ResponsesInputItem {
  return { type: "message", role: "assistant", content: [{ type: "output_text", text }] };
}

/** A plain string unless images come along, so prompts without images keep their bytes. */
function userContent(text: string, images: readonly ModelImage[] | undefined): string | ResponsesInputContent[] {
  return images?.length ? inputContent(text, images) : text;
}

function inputContent(text: string, images: readonly ModelImage[]): ResponsesInputContent[] {
  return [
    ...images.map(
      (image): ResponsesInputContent => ({ type: "input_image", image_url: imageUrl(image), detail: "auto" }),
    ),
    ...(text === "" ? [] : [{ type: "input_text" as const, text }]),
  ];
}

function projectToolChoice(choice: ToolChoice): ResponsesToolChoice {
  return typeof choice === "string" ? choice : { type: "function", name: choice.name };
}

function projectTool(tool: ToolDefinition): ResponsesTool {
  return {
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: false,
  };
}
