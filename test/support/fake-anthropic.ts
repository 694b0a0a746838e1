// A fake Anthropic Messages API on 127.0.0.1:0 for tests that run the real Claude Code CLI (or any Anthropic client).
// Each streamed POST /v1/messages consumes the next scripted reply and answers it the way the real API streams:
// message_start (with usage), a ping, content_block_start/delta/stop per block (text_delta, thinking_delta +
// signature_delta, redacted_thinking without deltas, input_json_delta), message_delta (stop_reason + usage),
// message_stop. Fault modes: an HTTP error with the API's error body, a slow stream, a hold (hang) at a chosen point,
// a mid-stream disconnect and an `error` event. count_tokens gets a harmless answer. Non-streamed calls (the CLI's
// model probe; also its fallback after a stream broke mid-way) take their own queue, `enqueueUnstreamed`, and get a
// harmless "ok" message when it is empty.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { listenOnLoopback, readBody, waitUntil } from "./util.js";

export type ScriptedBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "redacted_thinking"; data: string }
  /** `input` as an object is sent as its JSON text; a string is sent raw (malformed input on purpose). */
  | { type: "tool_use"; id?: string; name: string; input: object | string };

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export interface StreamedReply {
  blocks: ScriptedBlock[];
  /** Defaults to "tool_use" when a tool_use block is present, else "end_turn". */
  stopReason?: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "refusal" | "pause_turn";
  usage?: AnthropicUsage;
  /** Characters per text/thinking/input delta; whole strings when unset. */
  chunkSize?: number;
  /** Wait this long before every delta event (a slow stream). */
  deltaDelayMs?: number;
  /**
   * After this many delta events, stop writing until `release` settles (or, without `release`, until the client
   * goes away or close()). `holdAfterDeltas: 0` holds right after message_start.
   */
  holdAfterDeltas?: number;
  release?: Promise<unknown>;
  /** After this many delta events, destroy the socket (no message_stop). */
  disconnectAfterDeltas?: number;
  /** After this many delta events, send an `error` event and end the body. */
  errorAfterDeltas?: number;
  error?: { type: string; message: string };
}

export type ScriptedReply =
  | StreamedReply
  /** An HTTP error with the API's error body; `error.type` defaults from the status (500 api_error, 529 overloaded_error…). */
  | { status: number; error?: { type?: string; message?: string }; headers?: Record<string, string> };

/** A reply computed from the request body (JSON) when its turn in the queue comes. */
export type ReplyFor = (body: any) => ScriptedReply;

export interface RecordedRequest {
  method: string;
  url: string;
  /** The URL path without the query (`/v1/messages`, `/v1/messages/count_tokens`). */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  // `any` on purpose: tests read arbitrary fields of the request body (messages, tools, system, model).
  body: any;
  /** True for the streamed POST /v1/messages calls, the only ones that consume scripted replies. */
  scripted: boolean;
}

export interface FakeAnthropic {
  /** Origin only (no /v1): the value for ANTHROPIC_BASE_URL. */
  baseUrl: string;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** The streamed POST /v1/messages requests only. */
  messageRequests(): RecordedRequest[];
  /** A function is called with the request body when its turn comes (a reply that depends on the request). */
  enqueue(...replies: Array<ScriptedReply | ReplyFor>): void;
  /** Replies still queued; a test can assert the client made every call it scripted. */
  pending(): number;
  /** Replies for non-streamed POST /v1/messages calls, answered as one JSON message (fault hooks do not apply). */
  enqueueUnstreamed(...replies: ScriptedReply[]): void;
  /** Resolves once `count` streamed message requests have arrived. */
  waitForMessageRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

const defaultUsage: AnthropicUsage = {
  input_tokens: 12,
  output_tokens: 5,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

const errorTypeByStatus: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const queue: Array<ScriptedReply | ReplyFor> = [];
  const unstreamed: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  let messageSeq = 0;
  let toolSeq = 0;
  let requestSeq = 0;

  const server = await listenOnLoopback((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, "api_error", `fake-anthropic failed: ${String(err)}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? "").split("?")[0] ?? "";
    // `any`: the body is whatever the client sent; only `stream` and `model` are read here.
    const body: any = parseJsonOrText(raw);
    const scripted = req.method === "POST" && path === "/v1/messages" && body?.stream === true;
    requests.push({ method: req.method ?? "", url: req.url ?? "", path, headers: req.headers, body, scripted });
    res.setHeader("request-id", `req_fake_${++requestSeq}`);

    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      return sendJson(res, 200, { input_tokens: Math.max(1, Math.ceil(raw.byteLength / 4)) });
    }
    if (req.method === "POST" && path === "/v1/messages" && !scripted) {
      const reply = unstreamed.shift() ?? {
        blocks: [{ type: "text", text: "ok" }],
        usage: { input_tokens: 1, output_tokens: 1 },
      };
      if ("status" in reply) return sendReplyError(res, reply);
      return sendJson(
        res,
        200,
        wholeMessage(reply, `msg_fake_${++messageSeq}`, String(body?.model ?? ""), () => `toolu_fake_${++toolSeq}`),
      );
    }
    if (!scripted) return sendError(res, 404, "not_found_error", `fake-anthropic: no route ${req.method} ${path}`);

    const next = queue.shift();
    const reply = typeof next === "function" ? next(body) : next;
    // 400 rather than 5xx: the CLI does not retry it, so a missing script fails fast and says why.
    if (reply === undefined) {
      return sendError(
        res,
        400,
        "invalid_request_error",
        `fake-anthropic: no scripted reply left for request #${requests.length}`,
      );
    }
    if ("status" in reply) return sendReplyError(res, reply);
    await streamReply(
      req,
      res,
      reply,
      `msg_fake_${++messageSeq}`,
      String(body?.model ?? ""),
      () => `toolu_fake_${++toolSeq}`,
    );
  }

  const { port } = server;
  const messageRequests = () => requests.filter((r) => r.scripted);

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    messageRequests,
    enqueue: (...replies) => void queue.push(...replies),
    pending: () => queue.length,
    enqueueUnstreamed: (...replies) => void unstreamed.push(...replies),
    waitForMessageRequests: (count, timeoutMs = 10_000) =>
      waitUntil(
        () => messageRequests().length >= count,
        timeoutMs,
        () => `fake-anthropic: expected ${count} message requests, got ${messageRequests().length}`,
      ).then(() => messageRequests().slice(0, count)),
    close: () => server.close(),
  };
}

/** Plays one scripted reply as an SSE body; stops quietly once the client has gone away. */
async function streamReply(
  req: IncomingMessage,
  res: ServerResponse,
  reply: StreamedReply,
  messageId: string,
  model: string,
  nextToolId: () => string,
): Promise<void> {
  const gone = new Promise<void>((resolve) => res.on("close", () => resolve()));
  const sse = new SseWriter(res);
  const usage = reply.usage ?? defaultUsage;
  let deltas = 0;

  /** Runs the fault hooks that sit before a delta; false = stop writing. */
  async function beforeDelta(): Promise<boolean> {
    if (reply.holdAfterDeltas === deltas) await Promise.race([reply.release ?? new Promise(() => {}), gone]);
    if (reply.disconnectAfterDeltas === deltas) {
      // end(), not destroy(): what was written so far still reaches the client, then the body stops short.
      req.socket.end();
      return false;
    }
    if (reply.errorAfterDeltas === deltas) {
      sse.event("error", { type: "error", error: reply.error ?? { type: "overloaded_error", message: "Overloaded" } });
      res.end();
      return false;
    }
    if (reply.deltaDelayMs) await Promise.race([new Promise((r) => setTimeout(r, reply.deltaDelayMs)), gone]);
    return !res.destroyed && !res.writableEnded;
  }
  async function delta(index: number, body: object): Promise<boolean> {
    if (!(await beforeDelta())) return false;
    sse.event("content_block_delta", { type: "content_block_delta", index, delta: body });
    deltas += 1;
    return true;
  }

  sse.event("message_start", {
    type: "message_start",
    message: {
      id: messageId,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  sse.event("ping", { type: "ping" });

  for (const [index, block] of reply.blocks.entries()) {
    const toolId = block.type === "tool_use" ? (block.id ?? nextToolId()) : "";
    sse.event("content_block_start", { type: "content_block_start", index, content_block: startOf(block, toolId) });
    for (const piece of deltaBodies(block, reply.chunkSize)) {
      if (!(await delta(index, piece))) return;
    }
    sse.event("content_block_stop", { type: "content_block_stop", index });
  }
  if (!(await beforeDelta())) return;
  sse.event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: stopReasonOf(reply), stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  sse.event("message_stop", { type: "message_stop" });
  res.end();
}

function startOf(block: ScriptedBlock, toolId: string): object {
  switch (block.type) {
    case "text":
      return { type: "text", text: "" };
    case "thinking":
      return { type: "thinking", thinking: "", signature: "" };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: block.data };
    case "tool_use":
      return { type: "tool_use", id: toolId, name: block.name, input: {} };
  }
}

function deltaBodies(block: ScriptedBlock, chunkSize: number | undefined): object[] {
  switch (block.type) {
    case "text":
      return split(block.text, chunkSize).map((text) => ({ type: "text_delta", text }));
    case "thinking":
      return [
        ...split(block.thinking, chunkSize).map((thinking) => ({ type: "thinking_delta", thinking })),
        { type: "signature_delta", signature: block.signature ?? "c2lnbmF0dXJl" },
      ];
    case "redacted_thinking":
      return [];
    case "tool_use": {
      const json = typeof block.input === "string" ? block.input : JSON.stringify(block.input);
      // The real API opens every tool input with an empty partial_json.
      return ["", ...split(json, chunkSize)].map((partial_json) => ({ type: "input_json_delta", partial_json }));
    }
  }
}

function split(text: string, size: number | undefined): string[] {
  if (text === "") return [];
  if (!size || size <= 0) return [text];
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

/** A scripted reply as the non-streamed API returns it: one message object. */
function wholeMessage(reply: StreamedReply, id: string, model: string, nextToolId: () => string): object {
  const content = reply.blocks.map((block) => {
    switch (block.type) {
      case "text":
        return block;
      case "thinking":
        return { type: "thinking", thinking: block.thinking, signature: block.signature ?? "c2lnbmF0dXJl" };
      case "redacted_thinking":
        return block;
      case "tool_use":
        return {
          type: "tool_use",
          id: block.id ?? nextToolId(),
          name: block.name,
          input: typeof block.input === "string" ? JSON.parse(block.input) : block.input,
        };
      default:
        throw new Error(`unknown block ${(block as { type: string }).type}`);
    }
  });
  return {
    id,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: stopReasonOf(reply),
    stop_sequence: null,
    usage: { ...defaultUsage, ...reply.usage },
  };
}

function stopReasonOf(reply: StreamedReply): string {
  return reply.stopReason ?? (reply.blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn");
}

function sendReplyError(res: ServerResponse, reply: Extract<ScriptedReply, { status: number }>): void {
  const type = reply.error?.type ?? errorTypeByStatus[reply.status] ?? "api_error";
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  sendError(res, reply.status, type, reply.error?.message ?? `fake ${type}`);
}

class SseWriter {
  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();
  }

  event(name: string, data: object): void {
    if (!this.res.destroyed && !this.res.writableEnded)
      this.res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  }
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: "error", error: { type, message }, request_id: res.getHeader("request-id") ?? null });
}

function parseJsonOrText(raw: Buffer): unknown {
  const text = raw.toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
