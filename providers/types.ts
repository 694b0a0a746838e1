// The unified model vocabulary (docs/protocol/cursor-run.md §7.2, §7.3). Every endpoint adapter turns its HTTP stream
// into ModelEvents; the loop never sees endpoint JSON. Errors and cancellation are never a kind of `done`: an
// adapter's iterator throws ProviderError instead.
import * as z from "zod";

export const PROVIDER_KINDS = ["openai-chat", "openai-responses", "anthropic"] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/** Provider-reported token counts for one model call; absent fields stay absent (never estimated). */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

/**
 * Opaque continuation state an endpoint needs back on the next call, one variant per endpoint kind
 * (docs/protocol/cursor-run.md §8.5): a
 * projector replays only its own kind's state and never fabricates another's. The schema checks it where it is read
 * back from a stored checkpoint.
 */
export const replayStateSchema = z.discriminatedUnion("provider", [
  /** OpenAI Chat (and compatible, e.g. DeepSeek): the full reasoning_content of that response. */
  z.object({ provider: z.literal("openai-chat"), reasoningContent: z.string().optional() }),
  /** OpenAI Responses: the response's output items to send back verbatim (reasoning with encrypted_content, …). */
  z.object({ provider: z.literal("openai-responses"), items: z.array(z.record(z.string(), z.unknown())).readonly() }),
  /** Anthropic Messages: thinking / redacted_thinking blocks with their signatures, verbatim and in order. */
  z.object({ provider: z.literal("anthropic"), blocks: z.array(z.record(z.string(), z.unknown())).readonly() }),
]);
export type ReplayState = z.infer<typeof replayStateSchema>;

/**
 * How hard the model should think, from the client's `effort` model parameter (max mode without one means "high").
 * Each adapter maps it to its endpoint's own setting, where the endpoint has one.
 */
export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";

export type DoneReason = "stop" | "toolUse" | "length";

export type ModelEvent =
  | { type: "start" }
  | { type: "text_start" }
  | { type: "text_delta"; delta: string }
  | { type: "text_end" }
  | { type: "thinking_start" }
  | { type: "thinking_delta"; delta: string }
  | { type: "thinking_end" }
  | { type: "toolcall_start"; index: number; id: string; name: string }
  | { type: "toolcall_delta"; index: number; delta: string }
  | { type: "toolcall_end"; index: number; id: string; name: string; argumentsJson: string }
  /** Exactly one per call, the endpoint's final trusted total. */
  | { type: "usage"; usage: Usage }
  /** `stopSequence`: the client's stop sequence that ended the call, when the endpoint says which one. */
  | { type: "done"; reason: DoneReason; replay?: ReplayState; stopSequence?: string };

export type ProviderErrorReason = "error" | "aborted";

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly reason: ProviderErrorReason,
    readonly status?: number,
  ) {
    super(message);
    this.name = "ProviderError";
  }
}

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelToolCall {
  id: string;
  name: string;
  argumentsJson: string;
}

/** An image the user attached: inline bytes (base64 with their media type) or a URL the provider fetches. */
export type ModelImage = { type: "base64"; mediaType: string; data: string } | { type: "url"; url: string };

/** Provider-neutral history: what a model request is made of (docs/protocol/cursor-run.md §7.3). */
export type ModelMessage =
  /** `images` go ahead of the text, as Anthropic recommends; Cursor's side sends none. */
  | { role: "user"; content: string; images?: readonly ModelImage[] }
  | { role: "assistant"; text: string; thinking?: string; replay?: ReplayState; toolCalls: ModelToolCall[] }
  /** `images`: what the tool returned besides its text (a screenshot, an image file it read); Cursor's send none. */
  | { role: "tool"; toolCallId: string; content: string; images?: readonly ModelImage[] };

/** Replayable input only: no request ids, timestamps or call ids (docs/protocol/cursor-run.md §7.3). */
export interface ModelRequest {
  model: string;
  system: string;
  tools: readonly ToolDefinition[];
  messages: ModelMessage[];
  maxOutputTokens?: number;
  reasoningEffort?: ReasoningEffort;
  /** Whether and which tool the model must call; sent only with tools (the model's own default otherwise). */
  toolChoice?: ToolChoice;
  /** Strings that end the answer when the model writes them. */
  stopSequences?: readonly string[];
  /**
   * Stable per conversation: OpenAI endpoints route calls with the same key to the same prompt cache
   * (`prompt_cache_key`). Set only for endpoints that take the field.
   */
  promptCacheKey?: string;
}

/** `auto` may call tools, `none` must not, `required` must call one, `{name}` must call that one. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

export interface ProviderEndpoint {
  kind: ProviderKind;
  /** OpenAI base URLs include /v1; Anthropic's do not. */
  baseUrl: string;
  apiKey: string;
  /** Azure OpenAI deployments: `api-key` header and this `api-version` query instead of bearer auth. */
  azureApiVersion?: string;
}

/**
 * Receives a model call's events in order, synchronously, as each network read decodes them: no promise per event
 * between the socket and the run (issue 17). An abort from inside it ends the delivery at once.
 */
export type ModelEventSink = (event: ModelEvent) => void;

/** One endpoint adapter. The signal covers waiting for headers and reading the body. */
export interface ProviderAdapter {
  /** One model call: resolves once its terminal event went to `sink`, rejects with a ProviderError. */
  stream(request: ModelRequest, signal: AbortSignal, sink: ModelEventSink): Promise<void>;
}
