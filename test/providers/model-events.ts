// Helpers for asserting ModelEvent sequences: drain a stream, and fold runs of deltas into one entry so a
// 300-delta recording can be compared as a short, exact specification.
import { createHash } from "node:crypto";
import { ProviderError, type ModelEvent, type ModelRequest, type ProviderAdapter } from "../../providers/types.js";

export interface StreamOutcome {
  events: ModelEvent[];
  error?: ProviderError;
}

/** Drains the stream; a thrown ProviderError ends the outcome, anything else fails the test. */
export async function drain(
  adapter: ProviderAdapter,
  request: ModelRequest,
  signal = new AbortController().signal,
): Promise<StreamOutcome> {
  const events: ModelEvent[] = [];
  try {
    await adapter.stream(request, signal, (event) => events.push(event));
  } catch (error) {
    if (error instanceof ProviderError) return { events, error };
    throw error;
  }
  return { events };
}

export type FoldedEvent =
  | Exclude<ModelEvent, { type: "text_delta" | "thinking_delta" | "toolcall_delta" }>
  | { type: "text_delta" | "thinking_delta"; parts: number; text: string }
  | { type: "toolcall_delta"; index: number; parts: number; text: string };

type DeltaEvent = Extract<ModelEvent, { type: "text_delta" | "thinking_delta" | "toolcall_delta" }>;
type FoldedDelta = Extract<FoldedEvent, { parts: number }>;

/** Folds consecutive deltas of one block; long texts (and replayed reasoning) become `sha256:<hex>:<utf8 bytes>`. */
export function fold(events: ModelEvent[]): FoldedEvent[] {
  const folded: FoldedEvent[] = [];
  for (const event of events) {
    if (!isDelta(event)) {
      folded.push(digestReplay(event));
      continue;
    }
    const last = folded.at(-1);
    if (last !== undefined && continuesRun(last, event)) {
      last.text += event.delta;
      last.parts += 1;
    } else {
      folded.push(
        event.type === "toolcall_delta"
          ? { type: event.type, index: event.index, parts: 1, text: event.delta }
          : { type: event.type, parts: 1, text: event.delta },
      );
    }
  }
  return folded.map((entry) => ("text" in entry ? { ...entry, text: summarize(entry.text) } : entry));
}

function isDelta(event: ModelEvent): event is DeltaEvent {
  return event.type === "text_delta" || event.type === "thinking_delta" || event.type === "toolcall_delta";
}

function continuesRun(last: FoldedEvent, event: DeltaEvent): last is FoldedDelta {
  if (last.type !== event.type) return false;
  return event.type !== "toolcall_delta" || ("index" in last && last.index === event.index);
}

function digestReplay(event: Exclude<ModelEvent, DeltaEvent>): FoldedEvent {
  if (event.type !== "done" || event.replay?.provider !== "openai-chat" || event.replay.reasoningContent === undefined)
    return event;
  return { ...event, replay: { ...event.replay, reasoningContent: digest(event.replay.reasoningContent) } };
}

export function summarize(text: string): string {
  return text.length <= 160 ? text : digest(text);
}

export function digest(text: string): string {
  const bytes = Buffer.from(text, "utf8");
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}:${bytes.length}`;
}

/** SSE body from chunk payloads (objects are JSON-encoded; strings are sent as the data verbatim). */
export function sseBody(...payloads: Array<object | string>): string {
  return payloads
    .map((payload) => `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`)
    .join("");
}

/** One Chat Completions chunk with a single choice. */
export function chatChunk(delta: object, finishReason: string | null = null, extra: object = {}): object {
  const choices = [{ index: 0, delta, finish_reason: finishReason }];
  return { id: "chatcmpl-test", object: "chat.completion.chunk", choices, ...extra };
}

export function usageChunk(promptTokens: number, completionTokens: number): object {
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  return { id: "chatcmpl-test", object: "chat.completion.chunk", choices: [], usage };
}

/** A folded text block: `parts` deltas whose joined text is `value` (digested when long). */
export const foldedText = (parts: number, value: string): FoldedEvent[] => [
  { type: "text_start" },
  { type: "text_delta", parts, text: value },
  { type: "text_end" },
];

export const foldedThinking = (parts: number, value: string): FoldedEvent[] => [
  { type: "thinking_start" },
  { type: "thinking_delta", parts, text: value },
  { type: "thinking_end" },
];
