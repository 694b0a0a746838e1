// Responses API event stream → ModelEvents (docs/protocol/cursor-run.md §7.2, §7.3, §8.5, §9). One decoder per model
// call; it is fed the `data` of each SSE event and yields the events it implies, or throws ProviderError.
//
// Output items stream as `output_item.added` → deltas → `output_item.done`. The finished items are the replay
// state, kept verbatim from `output_item.done`: that is where a reasoning item's final `encrypted_content` is (the
// one in `.added` differs), and where a message keeps its `phase`. Recorded variants this accepts
// (fixtures/providers/openai-responses/PROVENANCE.md): events without `sequence_number`, `obfuscation` on deltas,
// reasoning with an empty summary, several summary parts, raw `reasoning_text` parts (DeepSeek), bare UUID ids.
import * as z from "zod";
import { isRecord, type StreamDecoder } from "./http.js";
import { ProviderError, type ModelEvent, type Usage } from "./types.js";

const OutputIndex = z.number().int().nonnegative();

const ItemEventSchema = z.object({
  output_index: OutputIndex,
  item: z.object({
    type: z.string(),
    call_id: z.string().nullish(),
    name: z.string().nullish(),
    arguments: z.string().nullish(),
    content: z
      .array(z.object({ type: z.string(), text: z.string().nullish(), refusal: z.string().nullish() }))
      .nullish(),
  }),
});

const DeltaEventSchema = z.object({ output_index: OutputIndex, delta: z.string() });
const SummaryPartEventSchema = z.object({ output_index: OutputIndex, summary_index: z.number().int().nonnegative() });

const UsageSchema = z.object({
  input_tokens: z.number().nullish(),
  output_tokens: z.number().nullish(),
  input_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().nullish() }).nullish(),
});

const ProblemSchema = z.object({ code: z.string().nullish(), message: z.string().nullish() });

const TerminalEventSchema = z.object({
  response: z.object({
    status: z.string().nullish(),
    error: ProblemSchema.nullish(),
    incomplete_details: z.object({ reason: z.string().nullish() }).nullish(),
    usage: UsageSchema.nullish(),
  }),
});

type ItemKind = "message" | "reasoning" | "function_call";
type BlockKind = "text" | "thinking";

interface OpenItem {
  kind: ItemKind;
  /** A function call's position among this response's calls, its id and its arguments streamed so far. */
  call?: { index: number; id: string; name: string; argumentsJson: string };
  /** A message's text streamed so far. */
  text: string;
  /** A reasoning item has shown thinking; the next summary part is separated from it by a blank line. */
  shownThinking: boolean;
  separatorPending: boolean;
}

const ITEM_KINDS: readonly string[] = ["message", "reasoning", "function_call"];

export class ResponsesStreamDecoder implements StreamDecoder {
  /** True once `response.completed` was accepted; the caller stops reading. */
  complete = false;
  private started = false;
  private openBlock: { kind: BlockKind; outputIndex: number } | undefined;
  private readonly openItems = new Map<number, OpenItem>();
  /** Finished output items by output_index, exactly as `output_item.done` carried them. */
  private readonly finishedItems = new Map<number, Record<string, unknown>>();
  private callCount = 0;

  *accept(data: string): Generator<ModelEvent> {
    // Some OpenAI-compatible servers end with a Chat-style marker; the Responses stream ends at a terminal event.
    if (data === "[DONE]") return;
    const event = parseEvent(data);
    if (event.type === "error") fail(`responses stream reported an error: ${describeProblem(event)}`);
    if (!this.started) {
      this.started = true;
      yield { type: "start" };
    }
    switch (event.type) {
      case "response.output_item.added":
        yield* this.addItem(parse(ItemEventSchema, event));
        return;
      case "response.output_text.delta":
      case "response.refusal.delta": // a refusal is the model's visible answer (as in the Chat adapter)
        yield* this.appendToBlock("text", parse(DeltaEventSchema, event));
        return;
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        yield* this.appendToBlock("thinking", parse(DeltaEventSchema, event));
        return;
      case "response.reasoning_summary_part.added":
        this.startSummaryPart(parse(SummaryPartEventSchema, event));
        return;
      case "response.function_call_arguments.delta":
        yield* this.appendArguments(parse(DeltaEventSchema, event));
        return;
      case "response.output_item.done":
        yield* this.finishItem(parse(ItemEventSchema, event), event);
        return;
      case "response.completed":
        yield* this.finishResponse(parse(TerminalEventSchema, event));
        return;
      case "response.failed":
      case "response.incomplete":
        yield* this.failResponse(event.type, parse(TerminalEventSchema, event));
        return;
      default:
        // Lifecycle (created, in_progress), part boundaries and `.done` echoes carry nothing the deltas and
        // finished items do not already say.
        return;
    }
  }

  /** The body ended without a terminal event: a bare EOF is a failure, never a normal done (docs/protocol/cursor-run.md
   * §7.3). */
  endOfStream(): never {
    const open = this.openItems.size === 0 ? "" : ` with ${this.openItems.size} unfinished output item(s)`;
    return fail(`responses stream ended without response.completed${open}`);
  }

  private *addItem({ output_index, item }: z.infer<typeof ItemEventSchema>): Generator<ModelEvent> {
    if (!ITEM_KINDS.includes(item.type)) fail(`responses stream sent an unsupported output item type "${item.type}"`);
    if (this.openItems.has(output_index) || this.finishedItems.has(output_index)) {
      fail(`responses stream added output item ${output_index} twice`);
    }
    const open: OpenItem = { kind: item.type as ItemKind, text: "", shownThinking: false, separatorPending: false };
    this.openItems.set(output_index, open);
    if (open.kind !== "function_call") return;
    if (!item.call_id || !item.name)
      fail(`function call at output ${output_index} has no ${item.call_id ? "name" : "call_id"}`);
    open.call = { index: this.callCount++, id: item.call_id, name: item.name, argumentsJson: "" };
    yield* this.closeBlock();
    yield { type: "toolcall_start", index: open.call.index, id: open.call.id, name: open.call.name };
  }

  private startSummaryPart({ output_index, summary_index }: z.infer<typeof SummaryPartEventSchema>): void {
    const item = this.itemOf(output_index, "reasoning", "a reasoning summary part");
    if (summary_index > 0 && item.shownThinking) item.separatorPending = true;
  }

  private *appendToBlock(
    kind: BlockKind,
    { output_index, delta }: z.infer<typeof DeltaEventSchema>,
  ): Generator<ModelEvent> {
    const item = this.itemOf(output_index, kind === "text" ? "message" : "reasoning", `a ${kind} delta`);
    if (delta === "") return;
    if (this.openBlock?.kind !== kind || this.openBlock.outputIndex !== output_index) {
      yield* this.closeBlock();
      this.openBlock = { kind, outputIndex: output_index };
      yield { type: kind === "text" ? "text_start" : "thinking_start" };
    }
    if (kind === "text") {
      item.text += delta;
      yield { type: "text_delta", delta };
      return;
    }
    // Summary parts are separate paragraphs; the display keeps them apart (the replay keeps the items as sent).
    yield { type: "thinking_delta", delta: item.separatorPending ? `\n\n${delta}` : delta };
    item.shownThinking = true;
    item.separatorPending = false;
  }

  private *closeBlock(): Generator<ModelEvent> {
    if (this.openBlock === undefined) return;
    yield { type: this.openBlock.kind === "text" ? "text_end" : "thinking_end" };
    this.openBlock = undefined;
  }

  private *appendArguments({ output_index, delta }: z.infer<typeof DeltaEventSchema>): Generator<ModelEvent> {
    const call = this.itemOf(output_index, "function_call", "function call arguments").call!;
    if (delta === "") return;
    call.argumentsJson += delta;
    yield { type: "toolcall_delta", index: call.index, delta };
  }

  private *finishItem({ output_index, item }: z.infer<typeof ItemEventSchema>, raw: RawEvent): Generator<ModelEvent> {
    const open = this.itemOf(output_index, item.type, "output_item.done");
    if (open.kind === "message") {
      const rest = unstreamedTail(open.text, messageText(item), `message at output ${output_index}`);
      yield* this.appendToBlock("text", { output_index, delta: rest });
    }
    this.openItems.delete(output_index);
    // The raw JSON object, not the parsed one: every field goes back verbatim on the next call.
    this.finishedItems.set(output_index, raw.item as Record<string, unknown>);
    if (this.openBlock?.outputIndex === output_index) yield* this.closeBlock();
    if (open.call !== undefined) yield* this.finishCall(open.call, item);
  }

  private *finishCall(
    call: NonNullable<OpenItem["call"]>,
    item: z.infer<typeof ItemEventSchema>["item"],
  ): Generator<ModelEvent> {
    if (item.call_id !== call.id || item.name !== call.name) {
      fail(`function call ${call.id} (${call.name}) finished as ${item.call_id} (${item.name})`);
    }
    const final = item.arguments ?? "";
    const rest = unstreamedTail(call.argumentsJson, final, `function call ${call.id} (${call.name})`);
    if (rest !== "") yield { type: "toolcall_delta", index: call.index, delta: rest };
    yield {
      type: "toolcall_end",
      index: call.index,
      id: call.id,
      name: call.name,
      argumentsJson: objectArguments(call, final),
    };
  }

  private *finishResponse({ response }: z.infer<typeof TerminalEventSchema>): Generator<ModelEvent> {
    if (response.status != null && response.status !== "completed") {
      fail(`response.completed carries status "${response.status}"`);
    }
    if (this.openItems.size > 0) fail(`response.completed with ${this.openItems.size} unfinished output item(s)`);
    this.complete = true;
    if (response.usage) yield { type: "usage", usage: toUsage(response.usage) };
    const items = [...this.finishedItems.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
    const reason = this.callCount > 0 ? "toolUse" : "stop";
    yield items.length === 0
      ? { type: "done", reason }
      : { type: "done", reason, replay: { provider: "openai-responses", items } };
  }

  /** failed / incomplete: the tokens were still spent, so their usage is reported before the failure. */
  private *failResponse(type: string, { response }: z.infer<typeof TerminalEventSchema>): Generator<ModelEvent> {
    if (response.usage) yield { type: "usage", usage: toUsage(response.usage) };
    const detail =
      type === "response.incomplete"
        ? `incomplete (${response.incomplete_details?.reason ?? "no reason given"})`
        : `failed: ${describeProblem(response.error ?? {})}`;
    fail(`response ${detail}`);
  }

  private itemOf(outputIndex: number, kind: string, what: string): OpenItem {
    const item = this.openItems.get(outputIndex);
    if (item === undefined) fail(`responses stream sent ${what} for output ${outputIndex}, which is not open`);
    if (item.kind !== kind) fail(`responses stream sent ${what} for output ${outputIndex}, a ${item.kind} item`);
    return item;
  }
}

type RawEvent = Record<string, unknown> & { type: string };

function fail(message: string): never {
  throw new ProviderError(message, "error");
}

function parseEvent(data: string): RawEvent {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    fail(`responses stream sent a non-JSON event: ${data.slice(0, 200)}`);
  }
  if (!isRecord(json) || typeof json.type !== "string")
    fail(`responses stream sent an event without a type: ${data.slice(0, 200)}`);
  return json as RawEvent;
}

function parse<T>(schema: z.ZodType<T>, event: RawEvent): T {
  const parsed = schema.safeParse(event);
  return parsed.success
    ? parsed.data
    : fail(`responses stream sent an unexpected ${event.type}: ${z.prettifyError(parsed.error)}`);
}

/** `error` events carry {code, message} nested under `error` (current API) or at the top level (older streams). */
function describeProblem(value: Record<string, unknown>): string {
  const nested = ProblemSchema.safeParse(value.error);
  const flat = ProblemSchema.safeParse(value);
  const problem = nested.success && nested.data.message ? nested.data : flat.success ? flat.data : {};
  const text = problem.message ?? "no message";
  return problem.code ? `${text} (${problem.code})` : text;
}

/**
 * A finished item holds its whole text or arguments; what was streamed must be a prefix of it, and the rest (all of
 * it, for a server that streams no deltas) is what the client has not seen yet.
 */
function unstreamedTail(streamed: string, final: string, what: string): string {
  if (!final.startsWith(streamed)) fail(`${what} finished with content that differs from its streamed deltas`);
  return final.slice(streamed.length);
}

/** The visible text of a finished message: its output_text and refusal parts in order. */
function messageText(item: z.infer<typeof ItemEventSchema>["item"]): string {
  return (item.content ?? [])
    .map((part) => (part.type === "refusal" ? part.refusal : part.type === "output_text" ? part.text : "") ?? "")
    .join("");
}

/** Empty arguments mean "no arguments"; anything else must already be a JSON object (as in the Chat adapter). */
function objectArguments(call: { id: string; name: string }, argumentsJson: string): string {
  const text = argumentsJson === "" ? "{}" : argumentsJson;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!isRecord(parsed))
    fail(`function call ${call.id} (${call.name}) arguments are not a JSON object: ${text.slice(0, 200)}`);
  return text;
}

function toUsage(raw: z.infer<typeof UsageSchema>): Usage {
  const cached = raw.input_tokens_details?.cached_tokens;
  const reasoning = raw.output_tokens_details?.reasoning_tokens;
  return {
    ...(raw.input_tokens == null ? {} : { inputTokens: raw.input_tokens }),
    ...(raw.output_tokens == null ? {} : { outputTokens: raw.output_tokens }),
    ...(cached == null ? {} : { cacheReadTokens: cached }),
    ...(reasoning == null ? {} : { reasoningTokens: reasoning }),
  };
}
