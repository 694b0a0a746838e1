// A fake OpenAI Responses endpoint on 127.0.0.1:0 for wire-level tests. Each POST /v1/responses consumes the next
// scripted turn and streams it the way the real API does (fixtures/providers/openai-responses): created,
// in_progress, then per output item `output_item.added` → deltas → `.done` events → `output_item.done`, then
// `response.completed` with the output and usage; `event:` lines and `sequence_number` on every record.
//
// Like the real API with `store: false`, it checks the input it is sent: a reasoning item must come back with the
// encrypted_content its `output_item.done` carried (the capsules in `.added` and in `response.completed` differ
// and are rejected), and every function_call needs its function_call_output.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { listenOnLoopback, readBody } from "./util.js";

export interface ScriptedToolCall {
  callId: string;
  name: string;
  args: object;
}

export interface ScriptedCustomToolCall {
  callId: string;
  name: string;
  input: string;
}

export interface ResponsesUsage {
  input_tokens: number;
  output_tokens: number;
  input_tokens_details?: { cached_tokens: number };
  output_tokens_details?: { reasoning_tokens: number };
}

export interface StreamedTurn {
  /** A reasoning item first: its summary parts stream as thinking; `encryptedContent` is the capsule of `.done`. */
  reasoning?: { id: string; summary: string[]; encryptedContent: string };
  text?: string;
  /** The message's phase (gpt-5.3-codex and later label commentary vs the final answer). */
  phase?: "commentary" | "final_answer";
  toolCalls?: ScriptedToolCall[];
  /** Freeform (`custom`) tool calls, such as Codex's apply_patch: the input is plain text, streamed in deltas. */
  customToolCalls?: ScriptedCustomToolCall[];
  usage?: ResponsesUsage;
  /** Characters per text/summary/argument delta; whole strings when unset. */
  chunkSize?: number;
  /** After this many text deltas the stream holds (the connection stays open) until `release` settles (or forever). */
  holdAfterDeltas?: number;
  release?: Promise<void>;
}

export interface RecordedResponsesRequest {
  url: string;
  headers: IncomingHttpHeaders;
  // `any` on purpose: tests read arbitrary fields of the request body (input, tools, include).
  body: any;
}

export interface FakeOpenAIResponses {
  /** Ends with /v1, like the official SDKs' base URL. */
  baseUrl: string;
  requests: RecordedResponsesRequest[];
  /** A function is called with the request body when its turn comes (a turn that depends on the request). */
  enqueue(...turns: Array<StreamedTurn | TurnFor>): void;
  pending(): number;
  /** The exact `item` of every `output_item.done` sent so far, in order. */
  sentItems: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** A turn computed from the request body (JSON) when its turn in the queue comes. */
export type TurnFor = (body: any) => StreamedTurn;

const defaultUsage: ResponsesUsage = { input_tokens: 10, output_tokens: 5 };

export async function startFakeOpenAIResponses(): Promise<FakeOpenAIResponses> {
  const queue: Array<StreamedTurn | TurnFor> = [];
  const requests: RecordedResponsesRequest[] = [];
  const sentItems: Array<Record<string, unknown>> = [];
  /** What the real service would decrypt: reasoning id → the capsule its output_item.done carried. */
  const capsules = new Map<string, string>();
  let responseSeq = 0;

  const server = await listenOnLoopback((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake-openai-responses failed: ${String(err)}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readBody(req)).toString("utf8");
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendError(res, 400, "request body is not JSON");
    }
    requests.push({ url: req.url ?? "", headers: req.headers, body });
    if (req.method !== "POST" || req.url !== "/v1/responses") {
      return sendError(res, 404, `fake-openai-responses serves only POST /v1/responses, got ${req.method} ${req.url}`);
    }
    const problem = inputProblem(body, capsules);
    if (problem) return sendError(res, 400, problem);
    const next = queue.shift();
    const turn = typeof next === "function" ? next(body) : next;
    if (turn === undefined) return sendError(res, 500, `no scripted turn left for request #${requests.length}`);
    const writer = new EventWriter(res, `resp_fake_${++responseSeq}`, String(body.model), turn);
    const output = streamTurn(writer, turn);
    for (const item of output) {
      sentItems.push(item);
      if (item.type === "reasoning") capsules.set(String(item.id), String(item.encrypted_content));
    }
    writer.completed(output, turn.usage ?? defaultUsage);
    await writer.flushed();
    res.end();
  }

  const { port } = server;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    sentItems,
    enqueue: (...turns) => void queue.push(...turns),
    pending: () => queue.length,
    close: () => server.close(),
  };
}

/** The checks the real API makes on a stateless request, with its messages; undefined when the input is fine. */
function inputProblem(body: any, capsules: ReadonlyMap<string, string>): string | undefined {
  if (body.stream !== true) return "this fake streams only: the request must set stream: true";
  if (body.store !== false || body.previous_response_id !== undefined)
    return "this fake is stateless: store must be false, without previous_response_id";
  const input: Array<Record<string, unknown>> = Array.isArray(body.input) ? body.input : [];
  for (const item of input) {
    if (item.type !== "reasoning") continue;
    const issued = capsules.get(String(item.id));
    if (issued === undefined || item.encrypted_content !== issued)
      return `The encrypted content for item ${String(item.id)} could not be verified.`;
  }
  const answered = new Set(input.filter((item) => item.type === "function_call_output").map((item) => item.call_id));
  const dangling = input.find((item) => item.type === "function_call" && !answered.has(item.call_id));
  if (dangling) return `No tool output found for function call ${String(dangling.call_id)}.`;
  if (input.some((item) => item.type === "function_call_output" && typeof item.output !== "string"))
    return "function_call_output.output must be a string";
  return undefined;
}

/** Streams one turn's output items and returns them as their `output_item.done` events carried them. */
function streamTurn(writer: EventWriter, turn: StreamedTurn): Array<Record<string, unknown>> {
  const output: Array<Record<string, unknown>> = [];
  const size = turn.chunkSize;
  if (turn.reasoning) {
    const { id, summary, encryptedContent } = turn.reasoning;
    const at = output.length;
    // The real service sends a different capsule while the item is open; only the finished one is valid.
    writer.event("response.output_item.added", {
      output_index: at,
      item: { id, type: "reasoning", encrypted_content: `${encryptedContent}~open`, summary: [] },
    });
    summary.forEach((text, summary_index) => {
      const part = { item_id: id, output_index: at, summary_index };
      writer.event("response.reasoning_summary_part.added", { ...part, part: { type: "summary_text", text: "" } });
      for (const delta of split(text, size))
        writer.event("response.reasoning_summary_text.delta", { ...part, delta, obfuscation: "x" });
      writer.event("response.reasoning_summary_text.done", { ...part, text });
      writer.event("response.reasoning_summary_part.done", { ...part, part: { type: "summary_text", text } });
    });
    output.push(
      writer.itemDone(at, {
        id,
        type: "reasoning",
        encrypted_content: encryptedContent,
        summary: summary.map((text) => ({ type: "summary_text", text })),
      }),
    );
  }
  if (turn.text !== undefined) {
    const at = output.length;
    const id = `msg_fake_${at}`;
    const phase = turn.phase ? { phase: turn.phase } : {};
    writer.event("response.output_item.added", {
      output_index: at,
      item: { id, type: "message", status: "in_progress", content: [], ...phase, role: "assistant" },
    });
    const part = { item_id: id, output_index: at, content_index: 0 };
    writer.event("response.content_part.added", {
      ...part,
      part: { type: "output_text", annotations: [], logprobs: [], text: "" },
    });
    for (const delta of split(turn.text, size))
      writer.event("response.output_text.delta", { ...part, delta, logprobs: [], obfuscation: "x" });
    writer.event("response.output_text.done", { ...part, text: turn.text, logprobs: [] });
    const content = { type: "output_text", annotations: [], logprobs: [], text: turn.text };
    writer.event("response.content_part.done", { ...part, part: content });
    output.push(
      writer.itemDone(at, {
        id,
        type: "message",
        status: "completed",
        content: [content],
        ...phase,
        role: "assistant",
      }),
    );
  }
  for (const call of turn.toolCalls ?? []) {
    const at = output.length;
    const id = `fc_fake_${call.callId}`;
    const args = JSON.stringify(call.args);
    writer.event("response.output_item.added", {
      output_index: at,
      item: { id, type: "function_call", status: "in_progress", arguments: "", call_id: call.callId, name: call.name },
    });
    for (const delta of split(args, size))
      writer.event("response.function_call_arguments.delta", {
        item_id: id,
        output_index: at,
        delta,
        obfuscation: "x",
      });
    writer.event("response.function_call_arguments.done", { item_id: id, output_index: at, arguments: args });
    output.push(
      writer.itemDone(at, {
        id,
        type: "function_call",
        status: "completed",
        arguments: args,
        call_id: call.callId,
        name: call.name,
      }),
    );
  }
  for (const call of turn.customToolCalls ?? []) output.push(streamCustomCall(writer, output.length, call, size));
  return output;
}

function streamCustomCall(
  writer: EventWriter,
  at: number,
  call: ScriptedCustomToolCall,
  size: number | undefined,
): Record<string, unknown> {
  const id = `ctc_fake_${call.callId}`;
  const item = { id, type: "custom_tool_call", call_id: call.callId, name: call.name };
  writer.event("response.output_item.added", { output_index: at, item: { ...item, status: "in_progress", input: "" } });
  for (const delta of split(call.input, size))
    writer.event("response.custom_tool_call_input.delta", { item_id: id, output_index: at, delta });
  writer.event("response.custom_tool_call_input.done", { item_id: id, output_index: at, input: call.input });
  return writer.itemDone(at, { ...item, status: "completed", input: call.input });
}

/** Writes Responses API records as `event: <type>` + `data: <json>` with a running sequence_number. */
class EventWriter {
  private sequence = 0;
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private textDeltas = 0;
  /** Records written after the hold point, sent when the turn's `release` settles. */
  private readonly held: string[] = [];

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string,
    private readonly model: string,
    private readonly hold: Pick<StreamedTurn, "holdAfterDeltas" | "release"> = {},
  ) {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    res.flushHeaders();
    this.event("response.created", { response: this.response("in_progress", [], null) });
    this.event("response.in_progress", { response: this.response("in_progress", [], null) });
  }

  event(type: string, fields: object): void {
    const record = { type, sequence_number: this.sequence++, ...fields };
    const text = `event: ${type}\ndata: ${JSON.stringify(record)}\n\n`;
    const limit = this.hold.holdAfterDeltas;
    if (limit !== undefined && this.textDeltas >= limit) this.held.push(text);
    else this.res.write(text);
    if (type === "response.output_text.delta") this.textDeltas += 1;
  }

  /** Resolves once everything held is written (at once when nothing is held). */
  async flushed(): Promise<void> {
    if (this.held.length === 0) return;
    await (this.hold.release ?? new Promise<void>(() => {}));
    for (const text of this.held) this.res.write(text);
  }

  itemDone(outputIndex: number, item: Record<string, unknown>): Record<string, unknown> {
    this.event("response.output_item.done", { output_index: outputIndex, item });
    return item;
  }

  /** The final response lists the output again; its reasoning capsules differ from `.done`'s, as recorded. */
  completed(output: Array<Record<string, unknown>>, usage: ResponsesUsage): void {
    const listed = output.map((item) =>
      item.type === "reasoning" ? { ...item, encrypted_content: `${String(item.encrypted_content)}~final` } : item,
    );
    this.event("response.completed", {
      response: this.response("completed", listed, {
        ...usage,
        total_tokens: usage.input_tokens + usage.output_tokens,
      }),
    });
  }

  private response(status: string, output: unknown[], usage: object | null): object {
    return {
      id: this.id,
      object: "response",
      created_at: this.createdAt,
      status,
      error: null,
      incomplete_details: null,
      model: this.model,
      output,
      store: false,
      usage,
    };
  }
}

function split(text: string, size: number | undefined): string[] {
  if (text === "") return [];
  if (!size || size <= 0) return [text];
  const chars = Array.from(text); // never split a surrogate pair
  const pieces: string[] = [];
  for (let at = 0; at < chars.length; at += size) pieces.push(chars.slice(at, at + size).join(""));
  return pieces;
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type: "invalid_request_error", code: null } }));
}
