// Canonical conversation history and its provider-neutral projection (docs/protocol/cursor-run.md §8.1, §8.4, §8.5).
// Canonical messages are append-only; a tool round is stored as one assistant batch followed by its results in
// completion order. Only complete rounds are ever projected, so no provider sees a dangling tool call.
import { once } from "./request-body.js";
import type { ModelImage, ModelMessage, ModelToolCall, ReplayState } from "./types.js";

/** An image as stored in the history: always its bytes (base64), never a URL that could change. */
export type InlineImage = Extract<ModelImage, { type: "base64" }>;

export interface CanonicalToolCall extends ModelToolCall {
  /** The provider's original position of the call within its response. */
  index: number;
}

export type CanonicalMessage =
  | { role: "system"; content: string }
  /** `images`: what the user attached (docs/protocol/cursor-run.md §8.8), stored with the message so every replay
   * sends the same bytes. */
  | { role: "user"; content: string; origin: "user" | "runtime"; eventId?: string; images?: InlineImage[] }
  | {
      role: "assistant";
      text: string;
      thinking?: string;
      replay?: ReplayState;
      toolRoundId?: string;
      toolCalls: CanonicalToolCall[];
    }
  | { role: "tool"; toolCallId: string; toolName: string; content: string; isError: boolean; toolRoundId?: string };

/** One model message per canonical message, for as long as it lives: the adapters encode it once (request-body.ts). */
const projected = new WeakMap<CanonicalMessage, ModelMessage>();

/** Projects canonical history to the model's view: system dropped (it comes from the run's PromptSpec), incomplete
 * tool rounds dropped, calls restored to provider order, results kept in completion order. */
export function projectHistory(history: readonly CanonicalMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (let i = 0; i < history.length; i++) {
    const m = history[i]!;
    if (m.role === "system" || m.role === "tool") continue; // results are emitted with their assistant batch below
    if (m.role === "user") {
      out.push(once(projected, m, () => projectUser(m)));
      continue;
    }
    const results = followingResults(history, i + 1);
    const wanted = new Set(m.toolCalls.map((c) => c.id));
    const complete = results.filter((r) => wanted.has(r.toolCallId));
    // An unsettled round is never projected (docs/protocol/cursor-run.md §10.2–§10.5).
    if (complete.length !== wanted.size) continue;
    out.push(once(projected, m, () => projectAssistant(m)));
    for (const r of complete) out.push(once(projected, r, () => projectResult(r)));
  }
  return out;
}

function projectUser({ content, images }: Extract<CanonicalMessage, { role: "user" }>): ModelMessage {
  return { role: "user", content, ...(images?.length ? { images } : {}) };
}

function projectAssistant({
  text,
  thinking,
  replay,
  toolCalls,
}: Extract<CanonicalMessage, { role: "assistant" }>): ModelMessage {
  return {
    role: "assistant",
    text,
    ...(thinking !== undefined ? { thinking } : {}),
    ...(replay !== undefined ? { replay } : {}),
    toolCalls: [...toolCalls]
      .sort((a, b) => a.index - b.index)
      .map(({ id, name, argumentsJson }) => ({ id, name, argumentsJson })),
  };
}

function projectResult({ toolCallId, content }: Extract<CanonicalMessage, { role: "tool" }>): ModelMessage {
  return { role: "tool", toolCallId, content };
}

function followingResults(history: readonly CanonicalMessage[], from: number) {
  const results: Array<Extract<CanonicalMessage, { role: "tool" }>> = [];
  for (let j = from; j < history.length; j++) {
    const next = history[j]!;
    if (next.role !== "tool") break;
    results.push(next);
  }
  return results;
}
