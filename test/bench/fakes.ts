// The benchmark's outside world, run as its own child process so its work never shares an event loop with the
// client or the server under test: a fake OpenAI Chat Completions provider and a fake Cursor upstream for the
// relay scenario. The provider is stateless per request — what it streams is spelled out by a `<<bench {...}>>`
// directive in the run's user text — and it reports, per request, when its first content byte left and how the
// request body grew against the previous request of the same conversation.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { nowMs } from "./stats.js";
import {
  DELTA_TEXT,
  SMALL_BODY,
  type FakesReady,
  type FakesReply,
  type FakesRequest,
  type ProviderRecord,
  type StreamDirective,
} from "./fakes-protocol.js";

const DIRECTIVE = /<<bench (\{[^<>]*\})>>/;
const BIG_CHUNK = Buffer.alloc(64 * 1024, 0x61);

const records = new Map<string, ProviderRecord[]>();
/** Previous request's messages (as JSON texts) per conversation, for the prefix check. */
const previousMessages = new Map<string, string[]>();

async function handleProvider(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await readAll(req);
  const body = JSON.parse(raw.toString("utf8")) as {
    messages: Array<{ role: string; content: unknown }>;
    stream_options?: unknown;
  };
  const directive = findDirective(body.messages);
  const record: ProviderRecord = {
    requestBytes: raw.byteLength,
    firstByteAt: 0,
    messages: body.messages.length,
    prefixOk: true,
    newMessageBytes: 0,
  };
  comparePrefix(directive.conversation, body.messages, record);
  const list = records.get(directive.tag) ?? [];
  list.push(record);
  records.set(directive.tag, list);

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const roundsSoFar = toolResultsSinceDirective(body.messages);
  if (roundsSoFar < (directive.toolRounds ?? 0)) {
    record.firstByteAt = nowMs();
    res.write(chunk({ role: "assistant", content: "" }) + chunk({ content: "Reading. " }));
    res.write(
      chunk({
        tool_calls: [
          {
            index: 0,
            id: `call_${roundsSoFar}_${record.messages}`,
            type: "function",
            function: { name: "Read", arguments: "" },
          },
        ],
      }),
    );
    res.write(
      chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ path: "src/notes.txt" }) } }] }),
    );
    return finish(res, "tool_calls", body);
  }
  await streamText(res, directive, record);
  finish(res, "stop", body);
}

async function streamText(res: ServerResponse, d: StreamDirective, record: ProviderRecord): Promise<void> {
  const delta = chunk({ content: DELTA_TEXT });
  const writes: number[] | undefined = d.stampWrites ? [] : undefined;
  if (writes) record.writes = writes;
  for (let i = 0; i < d.deltas; i++) {
    if (i === 0) {
      res.write(chunk({ role: "assistant", content: "" }) + delta);
      record.firstByteAt = nowMs();
    } else if (!res.write(delta)) {
      await new Promise((resolve) => res.once("drain", resolve));
    }
    writes?.push(nowMs());
    if (d.intervalMs) await new Promise((resolve) => setTimeout(resolve, d.intervalMs));
  }
}

function finish(res: ServerResponse, reason: string, body: { stream_options?: unknown }): void {
  res.write(chunk({}, reason));
  if (body.stream_options)
    res.write(
      `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: "bench", choices: [], usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } })}\n\n`,
    );
  res.end("data: [DONE]\n\n");
}

function chunk(delta: object, finishReason: string | null = null): string {
  const record = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 0,
    model: "bench",
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(record)}\n\n`;
}

function findDirective(messages: Array<{ role: string; content: unknown }>): StreamDirective {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    const match = m.role === "user" && typeof m.content === "string" ? DIRECTIVE.exec(m.content) : null;
    if (match) return JSON.parse(match[1]!) as StreamDirective;
  }
  throw new Error("fake provider: no <<bench {...}>> directive in the request");
}

/** Tool results after the user message that holds the directive = tool rounds already run in this turn. */
function toolResultsSinceDirective(messages: Array<{ role: string; content: unknown }>): number {
  let count = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user" && typeof m.content === "string" && DIRECTIVE.test(m.content)) break;
    if (m.role === "tool") count++;
  }
  return count;
}

function comparePrefix(conversation: string | undefined, messages: unknown[], record: ProviderRecord): void {
  if (!conversation) return;
  const texts = messages.map((m) => JSON.stringify(m));
  const before = previousMessages.get(conversation) ?? [];
  record.prefixOk = before.length <= texts.length && before.every((t, i) => t === texts[i]);
  record.newMessageBytes = texts.slice(before.length).reduce((n, t) => n + Buffer.byteLength(t), 0);
  previousMessages.set(conversation, texts);
}

async function handleUpstream(req: IncomingMessage, res: ServerResponse): Promise<void> {
  await readAll(req);
  const url = new URL(req.url ?? "/", "http://upstream");
  if (url.pathname === "/small") {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(SMALL_BODY) });
    res.end(SMALL_BODY);
    return;
  }
  if (url.pathname === "/big") {
    const total = Number(url.searchParams.get("bytes") ?? 0);
    res.writeHead(200, { "content-type": "application/octet-stream" });
    for (let sent = 0; sent < total; sent += BIG_CHUNK.byteLength) {
      const piece = BIG_CHUNK.subarray(0, Math.min(BIG_CHUNK.byteLength, total - sent));
      if (!res.write(piece)) await new Promise((resolve) => res.once("drain", resolve));
    }
    res.end();
    return;
  }
  res.writeHead(404).end();
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

function serve(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<Server> {
  const server = createServer((req, res) => {
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const url = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

if (process.send) {
  const provider = await serve(handleProvider);
  const upstream = await serve(handleUpstream);
  process.on("message", (message: FakesRequest) => {
    const reply: FakesReply = { id: message.id, records: records.get(message.tag) ?? [] };
    records.delete(message.tag);
    process.send!(reply);
  });
  process.on("disconnect", () => process.exit(0));
  const ready: FakesReady = { providerUrl: `${url(provider)}/v1`, upstreamUrl: url(upstream) };
  process.send(ready);
}
