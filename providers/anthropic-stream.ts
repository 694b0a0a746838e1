// Anthropic Messages event stream → ModelEvents (docs/protocol/cursor-run.md §7.2, §7.3, §9). One decoder per model
// call; it is fed each SSE event and either returns the events it implies or throws ProviderError.
//
// What the recordings show (fixtures/providers/anthropic/PROVENANCE.md): `ping` between any two events, padding
// inside the JSON, thinking blocks signed by one `signature_delta`, redacted_thinking blocks with no deltas at all,
// tool_use input arriving as `input_json_delta` fragments (possibly only `""`, meaning no arguments), usage split
// between message_start and message_delta (older streams report only output_tokens at the end).
import * as z from "zod";
import { isRecord, type StreamDecoder } from "./http.js";
import { ProviderError, type ModelEvent, type ReplayState, type Usage } from "./types.js";

const UsageSchema = z.object({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  cache_read_input_tokens: z.number().nullish(),
  cache_creation_input_tokens: z.number().nullish(),
});
type RawUsage = z.infer<typeof UsageSchema>;

const BlockSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string().optional() }),
  z.object({ type: z.literal("redacted_thinking"), data: z.string() }),
  z.object({ type: z.literal("tool_use"), id: z.string().min(1), name: z.string().min(1) }),
]);

const DeltaSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text_delta"), text: z.string() }),
  z.object({ type: z.literal("thinking_delta"), thinking: z.string() }),
  z.object({ type: z.literal("signature_delta"), signature: z.string() }),
  z.object({ type: z.literal("input_json_delta"), partial_json: z.string() }),
]);

const EventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("message_start"), message: z.object({ usage: UsageSchema.nullish() }) }),
  z.object({
    type: z.literal("content_block_start"),
    index: z.number().int(),
    content_block: z.looseObject({ type: z.string() }),
  }),
  z.object({
    type: z.literal("content_block_delta"),
    index: z.number().int(),
    delta: z.looseObject({ type: z.string() }),
  }),
  z.object({ type: z.literal("content_block_stop"), index: z.number().int() }),
  z.object({
    type: z.literal("message_delta"),
    delta: z.object({ stop_reason: z.string().nullish(), stop_sequence: z.string().nullish() }),
    usage: UsageSchema.nullish(),
  }),
  z.object({ type: z.literal("message_stop") }),
]);
type StreamEvent = z.infer<typeof EventSchema>;

type OpenBlock =
  | { type: "text"; index: number }
  | { type: "redacted_thinking"; index: number; data: string }
  | { type: "thinking"; index: number; thinking: string; signature: string }
  | { type: "tool_use"; index: number; call: number; id: string; name: string; input: string };

/** Stop reasons that end a call normally; every other one (max_tokens, refusal, pause_turn, …) is a failure. */
const DONE_REASONS = new Map<string, "stop" | "toolUse">([
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["tool_use", "toolUse"],
]);

export class AnthropicStreamDecoder implements StreamDecoder {
  complete = false;
  failure: ProviderError | undefined;
  private started = false;
  private open: OpenBlock | undefined;
  private lastIndex = -1;
  private toolCalls = 0;
  private readonly replayBlocks: Record<string, unknown>[] = [];
  private stopReason: string | undefined;
  /** Which of the request's stop sequences ended the message (stop_reason "stop_sequence"). */
  private stopSequence: string | undefined;
  private readonly usage = new AnthropicUsageFold();

  accept(data: string, eventName: string | undefined): ModelEvent[] {
    if (eventName === "error") fail(`anthropic stream reported an error: ${describeError(data)}`);
    const json = parseJson(data);
    if (!isRecord(json)) fail(`anthropic stream sent a non-object event: ${data.slice(0, 200)}`);
    const type = json.type;
    if (type === "error") fail(`anthropic stream reported an error: ${describeError(data)}`);
    // Pings may come anywhere; event types added to the API later are skipped, as Anthropic's versioning asks.
    if (type === "ping" || !isKnownType(type)) return [];
    const parsed = EventSchema.safeParse(json);
    if (!parsed.success)
      fail(`anthropic stream sent an unexpected ${String(type)} event: ${z.prettifyError(parsed.error)}`);
    if (this.complete) fail(`anthropic stream sent ${parsed.data.type} after message_stop`);
    if (!this.started && parsed.data.type !== "message_start")
      fail(`anthropic stream sent ${parsed.data.type} before message_start`);
    return this.acceptEvent(parsed.data);
  }

  /** The body ended before message_stop: a bare EOF is a failure, never a normal done (docs/protocol/cursor-run.md
   * §7.3). */
  endOfStream(): never {
    const open = this.open === undefined ? "" : `; open ${this.open.type} block ${this.open.index}`;
    return fail(
      `anthropic stream ended without message_stop (${this.stopReason === undefined ? "no stop_reason" : `stop_reason ${this.stopReason}`}${open})`,
    );
  }

  private acceptEvent(event: StreamEvent): ModelEvent[] {
    switch (event.type) {
      case "message_start":
        if (this.started) fail("anthropic stream sent message_start twice");
        this.started = true;
        this.usage.add(event.message.usage);
        return [{ type: "start" }];
      case "content_block_start":
        return this.startBlock(event.index, event.content_block);
      case "content_block_delta":
        return this.acceptDelta(this.openAt(event.index, "content_block_delta"), event.delta);
      case "content_block_stop":
        return this.stopBlock(this.openAt(event.index, "content_block_stop"));
      case "message_delta":
        if (this.open !== undefined) fail(`anthropic stream sent message_delta inside open block ${this.open.index}`);
        if (event.delta.stop_reason != null) this.stopReason = event.delta.stop_reason;
        if (event.delta.stop_sequence != null) this.stopSequence = event.delta.stop_sequence;
        this.usage.add(event.usage);
        return [];
      case "message_stop":
        return this.finish();
    }
  }

  private startBlock(index: number, raw: Record<string, unknown>): ModelEvent[] {
    if (this.open !== undefined) fail(`anthropic stream started block ${index} while block ${this.open.index} is open`);
    if (index <= this.lastIndex) fail(`anthropic stream started block ${index} after block ${this.lastIndex}`);
    this.lastIndex = index;
    const parsed = BlockSchema.safeParse(raw);
    if (!parsed.success) {
      // Server tools, documents and anything newer would be output we cannot carry; never drop it silently.
      const known = ["text", "thinking", "redacted_thinking", "tool_use"].includes(String(raw.type));
      fail(
        known
          ? `anthropic stream sent a malformed ${String(raw.type)} block: ${z.prettifyError(parsed.error)}`
          : `anthropic stream sent an unsupported content block type "${String(raw.type)}"`,
      );
    }
    const block = parsed.data;
    switch (block.type) {
      case "text":
        this.open = { type: "text", index };
        return block.text === ""
          ? [{ type: "text_start" }]
          : [{ type: "text_start" }, { type: "text_delta", delta: block.text }];
      case "thinking":
        this.open = { type: "thinking", index, thinking: block.thinking, signature: block.signature ?? "" };
        return block.thinking === ""
          ? [{ type: "thinking_start" }]
          : [{ type: "thinking_start" }, { type: "thinking_delta", delta: block.thinking }];
      case "redacted_thinking":
        // Opaque and complete at its start (no deltas follow): nothing to show, everything to replay.
        this.open = { type: "redacted_thinking", index, data: block.data };
        return [];
      case "tool_use": {
        const call = this.toolCalls++;
        this.open = { type: "tool_use", index, call, id: block.id, name: block.name, input: "" };
        return [{ type: "toolcall_start", index: call, id: block.id, name: block.name }];
      }
    }
  }

  private openAt(index: number, what: string): OpenBlock {
    if (this.open === undefined || this.open.index !== index)
      fail(`anthropic stream sent ${what} for block ${index}, which is not open`);
    return this.open;
  }

  private acceptDelta(block: OpenBlock, raw: Record<string, unknown>): ModelEvent[] {
    const parsed = DeltaSchema.safeParse(raw);
    if (!parsed.success) fail(`anthropic stream sent an unsupported delta "${String(raw.type)}"`);
    const delta = parsed.data;
    if (block.type === "text" && delta.type === "text_delta") {
      return delta.text === "" ? [] : [{ type: "text_delta", delta: delta.text }];
    }
    if (block.type === "thinking" && delta.type === "thinking_delta") {
      block.thinking += delta.thinking;
      return delta.thinking === "" ? [] : [{ type: "thinking_delta", delta: delta.thinking }];
    }
    if (block.type === "thinking" && delta.type === "signature_delta") {
      block.signature += delta.signature;
      return [];
    }
    if (block.type === "tool_use" && delta.type === "input_json_delta") {
      block.input += delta.partial_json;
      return delta.partial_json === ""
        ? []
        : [{ type: "toolcall_delta", index: block.call, delta: delta.partial_json }];
    }
    return fail(`anthropic stream sent ${delta.type} inside a ${block.type} block`);
  }

  private stopBlock(block: OpenBlock): ModelEvent[] {
    this.open = undefined;
    switch (block.type) {
      case "text":
        return [{ type: "text_end" }];
      case "redacted_thinking":
        this.replayBlocks.push({ type: "redacted_thinking", data: block.data });
        return [];
      case "thinking":
        // Kept whole with its signature: Anthropic verifies it when the block is sent back (docs/protocol/cursor-run.md
        // §8.5).
        this.replayBlocks.push({ type: "thinking", thinking: block.thinking, signature: block.signature });
        return [{ type: "thinking_end" }];
      case "tool_use":
        return [
          { type: "toolcall_end", index: block.call, id: block.id, name: block.name, argumentsJson: toolInput(block) },
        ];
    }
  }

  private finish(): ModelEvent[] {
    if (this.open !== undefined) fail("anthropic stream sent message_stop inside an open block");
    const stopReason = this.stopReason ?? fail("anthropic stream sent message_stop without a stop_reason");
    const reason = DONE_REASONS.get(stopReason);
    if (reason === "toolUse" && this.toolCalls === 0)
      fail('anthropic stream stopped with "tool_use" but streamed no tool_use block');
    if (reason === "stop" && this.toolCalls > 0)
      fail(`anthropic stream stopped with "${stopReason}" after ${this.toolCalls} tool_use block(s)`);
    this.complete = true;
    const usage = this.usage.result();
    const events: ModelEvent[] = usage === undefined ? [] : [{ type: "usage", usage }];
    // A call cut short (max_tokens, refusal, …) still spent its tokens: usage goes out, then the failure.
    if (reason === undefined) {
      this.failure = new ProviderError(describeStop(stopReason), "error");
      return events;
    }
    const replay: ReplayState | undefined =
      this.replayBlocks.length > 0 ? { provider: "anthropic", blocks: this.replayBlocks } : undefined;
    events.push({
      type: "done",
      reason,
      ...(replay === undefined ? {} : { replay }),
      ...(stopReason === "stop_sequence" && this.stopSequence !== undefined ? { stopSequence: this.stopSequence } : {}),
    });
    return events;
  }
}

function fail(message: string): never {
  throw new ProviderError(message, "error");
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return fail(`anthropic stream sent a non-JSON event: ${data.slice(0, 200)}`);
  }
}

function isKnownType(type: unknown): boolean {
  return typeof type === "string" && EventSchema.options.some((option) => option.shape.type.value === type);
}

/** `type: message` of Anthropic's `{type: "error", error: {type, message}}`, else the raw data. */
function describeError(data: string): string {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    json = undefined;
  }
  const error = isRecord(json) ? json.error : undefined;
  if (isRecord(error) && typeof error.message === "string") {
    return typeof error.type === "string" ? `${error.type}: ${error.message}` : error.message;
  }
  return data.trim().slice(0, 200) || "(no details)";
}

function describeStop(stopReason: string): string {
  if (stopReason === "max_tokens") return "the model stopped at its output limit (anthropic stop_reason max_tokens)";
  if (stopReason === "refusal") return "the model declined to answer (anthropic stop_reason refusal)";
  return `anthropic stream stopped with stop_reason "${stopReason}"`;
}

/** An empty input means "no arguments"; anything else must be a JSON object, passed on byte for byte. */
function toolInput(block: Extract<OpenBlock, { type: "tool_use" }>): string {
  const input = block.input === "" ? "{}" : block.input;
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    parsed = undefined;
  }
  if (!isRecord(parsed))
    fail(`tool_use ${block.id} (${block.name}) input is not a JSON object: ${input.slice(0, 200)}`);
  return input;
}

/**
 * A message's usage reports (message_start's, then message_delta's, or a whole message's) folded in order:
 * message_delta's counts are cumulative, so a field it reports replaces message_start's. Also used by the Messages
 * endpoint's pass-through, which reads the usage of answers it forwards untouched.
 */
export class AnthropicUsageFold {
  private readonly raw: RawUsage = {};

  /** A report that is not a usage object is ignored. */
  add(report: unknown): void {
    const parsed = UsageSchema.safeParse(report);
    if (!parsed.success) return;
    for (const [key, value] of Object.entries(parsed.data)) {
      if (value != null) this.raw[key as keyof RawUsage] = value;
    }
  }

  result(): Usage | undefined {
    return toUsage(this.raw);
  }
}

/**
 * Anthropic's input_tokens excludes cached prompt tokens; ours is the whole prompt (cache reads and writes
 * included), as OpenAI reports it and as Cursor's turn totals expect. Absent stays absent.
 */
function toUsage(raw: RawUsage): Usage | undefined {
  const {
    input_tokens: input,
    output_tokens: output,
    cache_read_input_tokens: read,
    cache_creation_input_tokens: write,
  } = raw;
  const usage: Usage = {
    ...(input == null ? {} : { inputTokens: input + (read ?? 0) + (write ?? 0) }),
    ...(output == null ? {} : { outputTokens: output }),
    ...(read == null ? {} : { cacheReadTokens: read }),
    ...(write == null ? {} : { cacheWriteTokens: write }),
  };
  return Object.keys(usage).length === 0 ? undefined : usage;
}
