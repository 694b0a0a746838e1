// A fake OpenAI Chat Completions endpoint on 127.0.0.1:0 for wire-level tests. Each POST /v1/chat/completions
// consumes the next scripted turn and answers it the way the real API streams (role chunk, reasoning_content and
// content deltas, tool_calls deltas, finish_reason chunk, usage chunk with `choices: []`, `data: [DONE]`).
import { readFile } from "node:fs/promises";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { listenOnLoopback, readBody, waitUntil } from "./util.js";

export interface ScriptedToolCall {
  id: string;
  name: string;
  /** An object is sent as its JSON text; a string is sent raw (lets tests send malformed arguments). */
  args: object | string;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  [detail: string]: unknown;
}

export interface StreamedTurn {
  reasoning?: string;
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Defaults to "tool_calls" when toolCalls is non-empty, else "stop". */
  finish?: "stop" | "tool_calls" | "length";
  /** Sent only when the request asked for it (`stream_options.include_usage`), as the real API does. */
  usage?: ChatUsage;
  /** Characters per content/reasoning/argument delta; whole strings when unset. */
  chunkSize?: number;
  /** The role chunk goes out at once, the rest only when this settles: the call stays in flight until then. */
  holdUntil?: Promise<unknown>;
}

export type ScriptedTurn =
  | StreamedTurn
  /** A recorded .sse body replayed byte for byte, optionally written in pieces of `splitBytes`. */
  | { fixture: string; splitBytes?: number }
  | { status: number; body: string }
  /** Some chunks, then the body ends without finish_reason or [DONE]. */
  | { bareEof: true; text?: string }
  /** Headers and one text chunk, then nothing until close() destroys the socket. */
  | { hang: true };

export interface RecordedChatRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  // `any` on purpose: tests read arbitrary fields of the request body (messages, tools, stream_options).
  body: any;
}

export interface FakeOpenAI {
  /** Ends with /v1, like the official SDKs' base URL. */
  baseUrl: string;
  requests: RecordedChatRequest[];
  /** A function is called with the request body when its turn comes (a turn that depends on the request). */
  enqueue(...turns: Array<ScriptedTurn | TurnFor>): void;
  /** Turns still queued; a test can assert the gateway made every call it scripted. */
  pending(): number;
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedChatRequest[]>;
  close(): Promise<void>;
}

/** A turn computed from the request body (JSON) when its turn in the queue comes. */
export type TurnFor = (body: any) => ScriptedTurn;

const defaultUsage: ChatUsage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: Array<ScriptedTurn | TurnFor> = [];
  const requests: RecordedChatRequest[] = [];
  let completionSeq = 0;

  const server = await listenOnLoopback((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake-openai failed: ${String(err)}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const recorded: RecordedChatRequest = {
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body: parseJsonOrText(raw),
    };
    requests.push(recorded);

    if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== "/v1/chat/completions") {
      return sendError(res, 404, `fake-openai serves only POST /v1/chat/completions, got ${req.method} ${req.url}`);
    }
    const next = queue.shift();
    const turn = typeof next === "function" ? next(recorded.body) : next;
    if (turn === undefined) {
      return sendError(res, 500, `fake-openai: no scripted turn left for request #${requests.length}`);
    }
    if ("status" in turn) {
      res.writeHead(turn.status, { "content-type": "application/json" });
      res.end(turn.body);
      return;
    }
    if ("fixture" in turn) return replayFixture(res, turn.fixture, turn.splitBytes);
    if (recorded.body?.stream !== true) {
      return sendError(res, 400, "fake-openai streams only: the request must set stream: true");
    }
    const chunks = new ChunkWriter(res, `chatcmpl-fake-${++completionSeq}`, String(recorded.body.model ?? ""));
    if ("hang" in turn) {
      chunks.delta({ role: "assistant", content: "" });
      chunks.delta({ content: "still thinking" });
      return; // the socket stays open until close() destroys it
    }
    if ("bareEof" in turn) {
      chunks.delta({ role: "assistant", content: "" });
      if (turn.text) chunks.delta({ content: turn.text });
      res.end();
      return;
    }
    const includeUsage = recorded.body?.stream_options?.include_usage === true;
    if (turn.holdUntil) {
      chunks.delta({ role: "assistant", content: "" });
      await turn.holdUntil;
    }
    streamTurn(chunks, turn, includeUsage);
    res.end();
  }

  const { port } = server;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...turns) => void queue.push(...turns),
    pending: () => queue.length,
    waitForRequests: (count, timeoutMs = 10_000) =>
      waitUntil(
        () => requests.length >= count,
        timeoutMs,
        () => `fake-openai: expected ${count} requests, got ${requests.length}`,
      ).then(() => requests.slice(0, count)),
    close: () => server.close(),
  };
}

function streamTurn(chunks: ChunkWriter, turn: StreamedTurn, includeUsage: boolean): void {
  const size = turn.chunkSize;
  chunks.delta({ role: "assistant", content: "" });
  for (const piece of split(turn.reasoning, size)) chunks.delta({ reasoning_content: piece });
  for (const piece of split(turn.text, size)) chunks.delta({ content: piece });
  (turn.toolCalls ?? []).forEach((call, index) => {
    chunks.delta({
      tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
    });
    const args = typeof call.args === "string" ? call.args : JSON.stringify(call.args);
    for (const piece of split(args, size)) chunks.delta({ tool_calls: [{ index, function: { arguments: piece } }] });
  });
  const finish = turn.finish ?? ((turn.toolCalls ?? []).length > 0 ? "tool_calls" : "stop");
  chunks.delta({}, finish);
  if (includeUsage) chunks.usage(turn.usage ?? defaultUsage);
  chunks.done();
}

/** Writes chat.completion.chunk records as SSE `data:` lines. */
class ChunkWriter {
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(
    private readonly res: ServerResponse,
    private readonly id: string,
    private readonly model: string,
  ) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
  }

  delta(delta: object, finishReason: string | null = null): void {
    this.record({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
  }

  usage(usage: ChatUsage): void {
    this.record({ choices: [], usage });
  }

  done(): void {
    this.res.write("data: [DONE]\n\n");
  }

  private record(fields: object): void {
    const chunk = { id: this.id, object: "chat.completion.chunk", created: this.created, model: this.model, ...fields };
    this.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
}

async function replayFixture(res: ServerResponse, path: string, splitBytes?: number): Promise<void> {
  const bytes = await readFile(path);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const step = splitBytes && splitBytes > 0 ? splitBytes : bytes.byteLength;
  for (let at = 0; at < bytes.byteLength; at += step) {
    res.write(bytes.subarray(at, at + step));
    // Let each piece leave as its own TCP write so the client's parser sees real splits.
    await new Promise((resolve) => setImmediate(resolve));
  }
  res.end();
}

function split(text: string | undefined, size: number | undefined): string[] {
  if (!text) return [];
  if (!size || size <= 0) return [text];
  const pieces: string[] = [];
  const chars = Array.from(text); // never split a surrogate pair
  for (let at = 0; at < chars.length; at += size) pieces.push(chars.slice(at, at + size).join(""));
  return pieces;
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type: "fake_openai_error", code: null } }));
}

function parseJsonOrText(raw: Buffer): unknown {
  const text = raw.toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
