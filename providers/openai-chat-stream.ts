// Chat Completions chunk stream → ModelEvents (docs/protocol/cursor-run.md §7.2, §7.3, §9). One decoder per model call;
// it is fed the `data` of each SSE event and either returns the events it implies or throws ProviderError.
//
// Recorded quirks this accepts without loosening the contract (fixtures/providers/openai-*/PROVENANCE.md):
// usage in the finish chunk (DeepSeek, Z.ai, Groq) or in a later `choices: []` chunk (OpenAI, xAI, Azure) or
// in a later chunk with an empty delta (OpenRouter); chunks after the usage chunk that carry nothing
// (OpenAI moderation); a first chunk with `choices: []` (Azure); empty-string deltas; SSE comments; a repeated
// finish_reason; `stop` after a forced tool call; `event: error` records (whatever their data).
import * as z from "zod";
import { isRecord, type StreamDecoder } from "./http.js";
import { ProviderError, type DoneReason, type ModelEvent, type Usage } from "./types.js";

const ToolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

const DeltaSchema = z.object({
  content: z.string().nullish(),
  /** A refusal is the model's visible answer, shown like text (OpenAI structured outputs). */
  refusal: z.string().nullish(),
  /** DeepSeek, xAI, Z.ai: the raw thinking, which must be replayed on the next call (docs/protocol/cursor-run.md §8.5).
   * */
  reasoning_content: z.string().nullish(),
  /** OpenRouter, Groq: displayable thinking with no Chat replay field of ours to carry it back. */
  reasoning: z.string().nullish(),
  tool_calls: z.array(ToolCallDeltaSchema).nullish(),
});

const ChoiceSchema = z.object({
  index: z.number(),
  delta: DeltaSchema.nullish(),
  finish_reason: z.string().nullish(),
});

const UsageSchema = z.object({
  prompt_tokens: z.number().nullish(),
  completion_tokens: z.number().nullish(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().nullish() }).nullish(),
  /** DeepSeek's own name for cache hits, used only when prompt_tokens_details is absent. */
  prompt_cache_hit_tokens: z.number().nullish(),
});

export const ChunkSchema = z.object({
  choices: z.array(ChoiceSchema).nullish(),
  usage: UsageSchema.nullish(),
});

type Chunk = z.infer<typeof ChunkSchema>;
type Choice = z.infer<typeof ChoiceSchema>;
type Delta = z.infer<typeof DeltaSchema>;
type ToolCallDelta = z.infer<typeof ToolCallDeltaSchema>;

interface OpenToolCall {
  index: number;
  id: string;
  name: string;
  argumentsJson: string;
}

const DONE_REASONS = new Map<string, DoneReason>([
  ["stop", "stop"],
  ["tool_calls", "toolUse"],
  ["length", "length"],
]);

export class ChatStreamDecoder implements StreamDecoder {
  /** True once `[DONE]` was accepted; the caller stops reading. */
  complete = false;
  private started = false;
  private openBlock: "thinking" | "text" | undefined;
  private reasoningContent = "";
  private readonly toolCalls = new Map<number, OpenToolCall>();
  private finishReason: DoneReason | undefined;
  private usage: Usage | undefined;

  accept(data: string, eventName?: string): ModelEvent[] {
    // OpenRouter and others report a mid-stream failure as an `event: error` record, whatever its data holds.
    if (eventName === "error") fail(`chat stream reported an error: ${errorText(data)}`);
    if (data === "[DONE]") return this.finishStream();
    const chunk = parseChunk(data);
    const events: ModelEvent[] = [];
    if (!this.started) {
      this.started = true;
      events.push({ type: "start" });
    }
    for (const choice of chunk.choices ?? []) this.acceptChoice(choice, events);
    if (chunk.usage) this.acceptUsage(toUsage(chunk.usage));
    return events;
  }

  /** The body ended without `[DONE]`: a bare EOF is a failure, never a normal done (docs/protocol/cursor-run.md §7.3).
   * */
  endOfStream(): never {
    const where = this.finishReason === undefined ? this.describeOpenParts() : "after finish_reason";
    return fail(`chat stream ended without [DONE] (${where})`);
  }

  private acceptChoice(choice: Choice, events: ModelEvent[]): void {
    if (choice.index !== 0) fail(`unexpected choice index ${choice.index} (one choice requested)`);
    if (choice.delta) {
      if (this.finishReason === undefined) this.acceptDelta(choice.delta, events);
      else if (carriesOutput(choice.delta)) fail("chat stream sent output after finish_reason");
    }
    if (choice.finish_reason != null) this.acceptFinish(choice.finish_reason, events);
  }

  private acceptDelta(delta: Delta, events: ModelEvent[]): void {
    // Some endpoints send reasoning under both names at once; reasoning_content is the replayable one.
    if (delta.reasoning_content) {
      this.reasoningContent += delta.reasoning_content;
      this.appendToBlock("thinking", delta.reasoning_content, events);
    } else if (delta.reasoning) {
      this.appendToBlock("thinking", delta.reasoning, events);
    }
    if (delta.content) this.appendToBlock("text", delta.content, events);
    if (delta.refusal) this.appendToBlock("text", delta.refusal, events);
    for (const part of delta.tool_calls ?? []) this.acceptToolCallDelta(part, events);
  }

  private appendToBlock(block: "thinking" | "text", delta: string, events: ModelEvent[]): void {
    if (this.openBlock !== block) {
      this.closeBlock(events);
      this.openBlock = block;
      events.push({ type: block === "text" ? "text_start" : "thinking_start" });
    }
    events.push(block === "text" ? { type: "text_delta", delta } : { type: "thinking_delta", delta });
  }

  private closeBlock(events: ModelEvent[]): void {
    if (this.openBlock === "text") events.push({ type: "text_end" });
    if (this.openBlock === "thinking") events.push({ type: "thinking_end" });
    this.openBlock = undefined;
  }

  private acceptToolCallDelta(part: ToolCallDelta, events: ModelEvent[]): void {
    const call = this.toolCalls.get(part.index) ?? this.startToolCall(part, events);
    checkRepeated(call, "id", part.id);
    checkRepeated(call, "name", part.function?.name);
    const fragment = part.function?.arguments ?? "";
    if (fragment === "") return;
    call.argumentsJson += fragment;
    events.push({ type: "toolcall_delta", index: call.index, delta: fragment });
  }

  /** First sight of a call index must name the call; a call never starts half-known. */
  private startToolCall(part: ToolCallDelta, events: ModelEvent[]): OpenToolCall {
    const name = part.function?.name;
    if (!part.id || !name) {
      fail(`tool call ${part.index} started without ${part.id ? "a function name" : "an id"}`);
    }
    const call = { index: part.index, id: part.id, name, argumentsJson: "" };
    this.toolCalls.set(part.index, call);
    this.closeBlock(events);
    events.push({ type: "toolcall_start", index: call.index, id: call.id, name: call.name });
    return call;
  }

  private acceptFinish(finishReason: string, events: ModelEvent[]): void {
    // A forced tool call (tool_choice naming a function) finishes with "stop": the calls are still the answer.
    const reason = finishReason === "stop" && this.toolCalls.size > 0 ? "toolUse" : DONE_REASONS.get(finishReason);
    if (reason === undefined) fail(`chat stream finished with finish_reason "${finishReason}"`);
    if (this.finishReason !== undefined) {
      if (this.finishReason === reason) return;
      fail(`chat stream sent a second finish_reason "${finishReason}"`);
    }
    checkToolUseAgreement(reason, this.toolCalls.size);
    this.finishReason = reason;
    this.closeBlock(events);
    const calls = [...this.toolCalls.values()].sort((a, b) => a.index - b.index);
    for (const call of calls) events.push(closeToolCall(call, finishReason));
  }

  /** Exactly one usage per call (docs/protocol/cursor-run.md §9): a repeat must agree, a different second total is an
   * error. */
  private acceptUsage(usage: Usage): void {
    const [before, after] = [JSON.stringify(this.usage), JSON.stringify(usage)];
    if (this.usage !== undefined && before !== after) {
      fail(`chat stream reported usage twice with different totals: ${before} then ${after}`);
    }
    this.usage = usage;
  }

  /** `[DONE]`: usage (if any) goes out only now, because it may follow the finish chunk. */
  private finishStream(): ModelEvent[] {
    const reason = this.finishReason ?? fail(`chat stream sent [DONE] before finishing (${this.describeOpenParts()})`);
    this.complete = true;
    const events: ModelEvent[] = this.usage === undefined ? [] : [{ type: "usage", usage: this.usage }];
    const reasoningContent = this.reasoningContent;
    events.push(
      reasoningContent === ""
        ? { type: "done", reason }
        : { type: "done", reason, replay: { provider: "openai-chat", reasoningContent } },
    );
    return events;
  }

  private describeOpenParts(): string {
    const open = [
      ...(this.openBlock === undefined ? [] : [`open ${this.openBlock} block`]),
      ...(this.toolCalls.size === 0 ? [] : [`${this.toolCalls.size} unclosed tool call(s)`]),
    ];
    return ["no finish_reason", ...open].join("; ");
  }
}

function fail(message: string): never {
  throw new ProviderError(message, "error");
}

function parseChunk(data: string): Chunk {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    fail(`chat stream sent a non-JSON event: ${data.slice(0, 200)}`);
  }
  // OpenAI-compatible services report mid-stream failures in-band as `{error: {...}}`.
  if (isRecord(json) && json.error != null) fail(`chat stream reported an error: ${errorText(data)}`);
  if (isTextChunk(json)) return json;
  const parsed = ChunkSchema.safeParse(json);
  return parsed.success ? parsed.data : fail(`chat stream sent an unexpected chunk: ${z.prettifyError(parsed.error)}`);
}

/**
 * The chunk nearly every read carries — one choice whose delta holds only text — checked by hand: it is what
 * ChunkSchema accepts for that shape, at a fraction of zod's cost per delta (issue 17). Any other shape goes
 * through the schema.
 */
export function isTextChunk(json: unknown): json is Chunk {
  if (!isRecord(json) || json.usage != null || !Array.isArray(json.choices) || json.choices.length !== 1) return false;
  const choice: unknown = json.choices[0];
  if (!isRecord(choice) || choice.index !== 0 || choice.finish_reason != null || !isRecord(choice.delta)) return false;
  const { content, refusal, reasoning_content, reasoning, tool_calls } = choice.delta;
  return (
    typeof content === "string" &&
    refusal == null &&
    reasoning_content == null &&
    reasoning == null &&
    tool_calls == null
  );
}

/** The message of an `{error: {message}}` or `{error: "…"}` payload, else the data itself. */
function errorText(data: string): string {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return data.trim().slice(0, 200) || "(no details)";
  }
  const error = isRecord(json) ? json.error : undefined;
  if (isRecord(error) && typeof error.message === "string") return error.message;
  if (typeof error === "string") return error;
  return JSON.stringify(error ?? json).slice(0, 200);
}

/**
 * Empty arguments mean "no arguments": the call ends with "{}" (deltas carried nothing), so every
 * toolcall_end holds a JSON object. Anything else must already be a JSON object.
 */
function closeToolCall(call: OpenToolCall, finishReason: string): ModelEvent {
  const argumentsJson = call.argumentsJson === "" ? "{}" : call.argumentsJson;
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsJson);
  } catch {
    parsed = undefined;
  }
  if (!isRecord(parsed)) {
    const quoted = argumentsJson.slice(0, 200);
    fail(`tool call ${call.id} (${call.name}) arguments are not a JSON object at "${finishReason}": ${quoted}`);
  }
  return { type: "toolcall_end", index: call.index, id: call.id, name: call.name, argumentsJson };
}

/** "tool_calls" without any streamed call would leave the loop waiting for calls that never came. */
function checkToolUseAgreement(reason: DoneReason, toolCallCount: number): void {
  if (reason === "toolUse" && toolCallCount === 0) {
    fail('chat stream finished with "tool_calls" but streamed no tool call');
  }
}

function checkRepeated(call: OpenToolCall, field: "id" | "name", value: string | null | undefined): void {
  if (value && value !== call[field]) {
    fail(`tool call ${call.index} changed its ${field} from "${call[field]}" to "${value}"`);
  }
}

function carriesOutput(delta: Delta): boolean {
  const { content, refusal, reasoning_content, reasoning, tool_calls } = delta;
  return Boolean(content || refusal || reasoning_content || reasoning || tool_calls?.length);
}

function toUsage(raw: z.infer<typeof UsageSchema>): Usage {
  const cached = raw.prompt_tokens_details?.cached_tokens ?? raw.prompt_cache_hit_tokens;
  const reasoning = raw.completion_tokens_details?.reasoning_tokens;
  // Built in one fixed key order so two reports of the same totals compare equal as JSON.
  return {
    ...(raw.prompt_tokens == null ? {} : { inputTokens: raw.prompt_tokens }),
    ...(raw.completion_tokens == null ? {} : { outputTokens: raw.completion_tokens }),
    ...(cached == null ? {} : { cacheReadTokens: cached }),
    ...(reasoning == null ? {} : { reasoningTokens: reasoning }),
  };
}
