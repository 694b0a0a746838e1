// Summaries and automatic compaction (docs/protocol/cursor-run.md §8.10): how large the next request is against the
// model's compaction threshold, which recent messages stay verbatim, the summary call's request and the message that
// stands in for the summarized part. The Run machine decides when; this only measures and builds.
import type { ContextMeasure } from "../machines/run.js";
import type { ModeAssets, ToolDefinition } from "../prompt/assets.js";
import { renderRuntime } from "../prompt/render.js";
import { type CanonicalMessage, projectHistory } from "../providers/messages.js";
import type { ModelRequest, ProviderKind, Usage } from "../providers/types.js";
import { estimateFixedTokens, estimateTokens } from "../cursor/token-breakdown.js";
import type { CheckpointBuilder } from "../cursor/checkpoint-builder.js";
import type { ResolvedModel } from "./models.js";

/** The context window assumed when the model's config names none: the smallest common window of the kind. */
export const DEFAULT_CONTEXT_WINDOW: Readonly<Record<ProviderKind, number>> = {
  "openai-chat": 128_000,
  "openai-responses": 200_000,
  anthropic: 200_000,
};

/** Share of the window kept free for the error of the character estimate. */
const SAFETY_MARGIN = 0.15;
/** Share of the threshold, after the system prompt and tool definitions, that the verbatim tail may take. */
const KEPT_SHARE = 0.3;

/** The compaction threshold: the window, less the answer's output reserve (the configured maxOutputTokens, at most a
 * quarter of the window), less the safety margin. */
export function compactionLimit(model: ResolvedModel): number {
  const window = model.contextWindow ?? DEFAULT_CONTEXT_WINDOW[model.endpoint.kind];
  const reserve = Math.min(model.maxOutputTokens ?? 0, Math.floor(window / 4));
  return Math.floor((window - reserve) * (1 - SAFETY_MARGIN));
}

const SUMMARY_EVENT = "summary:";

/** The message that stands for a summarized part of the history. */
export function isSummary(m: CanonicalMessage): boolean {
  return m.role === "user" && m.origin === "runtime" && (m.eventId?.startsWith(SUMMARY_EVENT) ?? false);
}

/** The summary the history starts with, if any (the context breakdown counts it apart). */
export function summaryText(history: readonly CanonicalMessage[]): string {
  const first = history[0];
  return first?.role === "user" && isSummary(first) ? first.content : "";
}

function summaryMessage(text: string, requestId: string, callIndex: number): CanonicalMessage {
  const content =
    `<conversation_summary>\n${text.trim()}\n</conversation_summary>\n\n` +
    "The conversation before this point was summarized above to fit the model's context window; " +
    "the messages after it are kept word for word.";
  return { role: "user", content, origin: "runtime", eventId: `${SUMMARY_EVENT}${requestId}:${callIndex}` };
}

const tokens = new WeakMap<CanonicalMessage, number>();

/** A mode's tool list is loaded once and shared by its runs: its estimate is taken once per list. */
const toolListTokens = new WeakMap<readonly ToolDefinition[], number>();

function toolTokens(tools: readonly ToolDefinition[]): number {
  let tokens = toolListTokens.get(tools);
  if (tokens === undefined) {
    tokens = estimateTokens(JSON.stringify(tools));
    toolListTokens.set(tools, tokens);
  }
  return tokens;
}

function messageTokens(m: CanonicalMessage): number {
  let n = tokens.get(m);
  if (n === undefined) {
    const text =
      m.role === "assistant"
        ? m.text + (m.thinking ?? "") + m.toolCalls.map((c) => c.name + c.argumentsJson).join("")
        : m.content;
    n = estimateTokens(text);
    tokens.set(m, n);
  }
  return n;
}

/**
 * Where the verbatim tail starts: the earliest message, never a tool result (a round stays whole with its calls),
 * from which the tail fits in the kept share of the threshold — but never after the start of the last round or the
 * last user message, so the calls just answered and their results always stay.
 */
function keptFrom(history: readonly CanonicalMessage[], budget: number, total: number): number {
  // The whole history fits: the tail starts at the first message that is not a tool result.
  if (total <= budget) {
    const first = history.findIndex((m) => m.role !== "tool");
    return first < 0 ? history.length : first;
  }
  let last = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i]!.role !== "tool") {
      last = i;
      break;
    }
  }
  if (last < 0) return history.length;
  let cut = last;
  let size = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    size += messageTokens(history[i]!);
    if (size > budget) break;
    if (history[i]!.role !== "tool" && i < cut) cut = i;
  }
  return cut;
}

/** Why the summary is asked for; it becomes the summary request's user query. */
const QUERIES = {
  automatic:
    "The conversation above is close to the model's context window. Summarize it; the most recent messages " +
    "follow your summary word for word, so the summary covers what came before them.",
  requested: "The user asked for a summary of the whole conversation above. Summarize it.",
} as const;

/**
 * The compaction of one run. It measures each request: the estimate is the larger of the character estimate of the
 * whole request and, once an answer call reported its usage, that call's input and output tokens plus the estimate
 * of what was added since (the provider's own count is the better one whenever there is one). It builds the summary
 * call and, with its text, the compacted history.
 */
export class Compactor {
  readonly limit: number;
  private readonly fixed: number;
  private lastCall: { tokens: number; estimateAtCall: number } | undefined;
  private summed: { history: readonly CanonicalMessage[]; count: number; tokens: number } | undefined;
  /** Where the verbatim tail starts for the summary call in flight. */
  private cut = 0;
  /** The summary message of the latest compaction, committed with the compacted checkpoint. */
  summary: CanonicalMessage | undefined;

  constructor(
    private readonly model: ResolvedModel,
    /** What every request of the run carries besides the history: the system prompt and the offered tools. */
    mode: { systemPrompt: string; tools: readonly ToolDefinition[] },
    private readonly compaction: ModeAssets,
    /** summarize_action: the whole history is summarized, nothing is kept verbatim. */
    private readonly requested: boolean,
  ) {
    this.limit = compactionLimit(model);
    this.fixed = estimateFixedTokens(mode.systemPrompt) + toolTokens(mode.tools);
  }

  private estimate(history: readonly CanonicalMessage[]): number {
    return this.fixed + this.historyTokens(history);
  }

  /**
   * The history's own estimate, measured twice a call: the run's history array only grows (a compaction or reset
   * starts a new one), so only the messages added since the last measure are counted.
   */
  private historyTokens(history: readonly CanonicalMessage[]): number {
    let sum = this.summed;
    if (sum?.history !== history || sum.count > history.length) sum = { history, count: 0, tokens: 0 };
    for (let i = sum.count; i < history.length; i++) sum.tokens += messageTokens(history[i]!);
    sum.count = history.length;
    this.summed = sum;
    return sum.tokens;
  }

  private keptFrom(history: readonly CanonicalMessage[]): number {
    if (this.requested) return history.length;
    const budget = Math.floor(Math.max(0, this.limit - this.fixed) * KEPT_SHARE);
    return keptFrom(history, budget, this.historyTokens(history));
  }

  measure(history: readonly CanonicalMessage[]): ContextMeasure {
    const chars = this.estimate(history);
    const provider = this.lastCall ? this.lastCall.tokens + chars - this.lastCall.estimateAtCall : 0;
    const summarizable = history.slice(0, this.keptFrom(history)).filter((m) => !isSummary(m)).length;
    return { estimate: Math.max(chars, provider), limit: this.limit, summarizable };
  }

  /** An answer call's usage, against the history its request was projected from. */
  answered(history: readonly CanonicalMessage[], usage: Usage | undefined): void {
    if (usage?.inputTokens === undefined) return;
    this.lastCall = { tokens: usage.inputTokens + (usage.outputTokens ?? 0), estimateAtCall: this.estimate(history) };
  }

  /** The summary call: the compaction mode's prompt, no tools, the part to summarize, then the instruction. */
  request(history: readonly CanonicalMessage[]): ModelRequest {
    this.cut = this.keptFrom(history);
    const instruction = renderRuntime(this.compaction.runtimeTemplate, {
      timestamp: new Date().toISOString(),
      userQuery: QUERIES[this.requested ? "requested" : "automatic"],
    });
    return {
      model: this.model.model,
      system: this.compaction.systemPrompt,
      tools: [],
      messages: [...projectHistory(history.slice(0, this.cut)), { role: "user", content: instruction }],
      ...(this.model.maxOutputTokens ? { maxOutputTokens: this.model.maxOutputTokens } : {}),
      ...(this.model.reasoningEffort ? { reasoningEffort: this.model.reasoningEffort } : {}),
    };
  }

  /**
   * The summary call's text replaces the history before the verbatim tail, in the checkpoint's roots too; the
   * compacted history is returned. The provider's last count now describes a history that no longer exists.
   */
  apply(
    history: readonly CanonicalMessage[],
    text: string,
    builder: CheckpointBuilder,
    summaryId: { requestId: string; callIndex: number },
  ): CanonicalMessage[] {
    this.summary = summaryMessage(text, summaryId.requestId, summaryId.callIndex);
    builder.compact(this.summary, text.trim(), this.cut + 1);
    this.lastCall = undefined;
    return [this.summary, ...history.slice(this.cut)];
  }

  /** How many messages the summary call in flight replaces. */
  get summarized(): number {
    return this.cut;
  }
}
