// `POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic Messages front door. A request is
// authenticated with the gateway's token, read with a size bound, validated, mapped to a configured model and
// carried out by that model's provider adapter; Anthropic-kind models are passed through.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type Koa from "koa";
import type * as z from "zod";
import type { Logger } from "../log/logger.js";
import type { ProviderAdapter, ProviderEndpoint, Usage } from "../providers/types.js";
import { MessageAssembler } from "./assemble.js";
import { countTokens } from "./count-tokens.js";
import { MessagesApiError, toMessagesApiError } from "./errors.js";
import { passThrough } from "./passthrough.js";
import { projectRequest } from "./project.js";
import { MessageRenderer, type StreamEvent } from "./render.js";
import { countTokensRequestSchema, type MessagesRequest, messagesRequestSchema } from "./schema.js";
import type { SignatureCodec } from "./signature.js";

const PING_INTERVAL_MS = 10_000;

export interface MessagesModel {
  /** The configured model id. */
  id: string;
  endpoint: ProviderEndpoint;
  /** The provider's model name. */
  model: string;
  maxOutputTokens?: number;
}

export interface MessagesApiOptions {
  models: readonly MessagesModel[];
  /** Client model names (Claude Code's own) → configured model ids. */
  aliases: ReadonlyMap<string, string>;
  token: string;
  codec: SignatureCodec;
  maxBodyBytes: number;
  adapterFor(endpoint: ProviderEndpoint): ProviderAdapter;
  /** Each call's provider-reported usage, under the provider's model name (the gateway meters it). */
  onUsage: (model: string, usage: Usage) => void;
  log: Logger;
}

/** The routes, each checking the token itself (x-api-key or Bearer). */
export const MESSAGES_API_PATHS: ReadonlySet<string> = new Set(["/v1/messages", "/v1/messages/count_tokens"]);

export function messagesApiRoutes(o: MessagesApiOptions): Koa.Middleware {
  const models = new Map(o.models.map((m) => [m.id, m]));
  const tokenDigest = digest(o.token);
  const guarded =
    (serve: (ctx: Koa.Context, raw: Record<string, unknown>) => Promise<void>) =>
    async (ctx: Koa.Context): Promise<void> => {
      ctx.respond = false;
      try {
        authenticate(ctx.req, tokenDigest);
        await serve(ctx, await readJson(ctx.req, o.maxBodyBytes));
      } catch (error) {
        sendError(ctx.res, toMessagesApiError(error), o.log);
      }
    };
  const resolve = (name: string): MessagesModel => {
    const model = models.get(o.aliases.get(name) ?? name);
    if (!model) throw new MessagesApiError("not_found_error", `model: ${name}`);
    return model;
  };
  const routes = new Map([
    ["/v1/messages", guarded((ctx, raw) => serveMessages(ctx, raw, resolve, o))],
    ["/v1/messages/count_tokens", guarded((ctx, raw) => serveCountTokens(ctx, raw, resolve, o))],
  ]);
  return async (ctx, next) => {
    const route = ctx.method === "POST" ? routes.get(ctx.path) : undefined;
    return route ? route(ctx) : next();
  };
}

async function serveMessages(
  ctx: Koa.Context,
  raw: Record<string, unknown>,
  resolve: (name: string) => MessagesModel,
  o: MessagesApiOptions,
): Promise<void> {
  const request = parse(messagesRequestSchema, raw);
  const target = resolve(request.model);
  const signal = abortOnClose(ctx.res);
  const onUsage = (usage: Usage) => recordUsage(usage, request, target, o);
  if (target.endpoint.kind === "anthropic") {
    return passThrough({ ...passThroughCall(ctx, raw, target, signal), onUsage }, ctx.res);
  }
  const modelRequest = projectRequest(request, target, o.codec);
  const renderer = new MessageRenderer(`msg_${randomBytes(12).toString("hex")}`, request.model, o.codec);
  // The response opens with the first event, which waits for the provider's headers: a refused call is still an
  // HTTP error, not a stream.
  let sink: Sink | undefined;
  const open = (): Sink => {
    sink = request.stream ? sseSink(ctx.res) : jsonSink(ctx.res);
    sink.send(renderer.start());
    return sink;
  };
  try {
    await o.adapterFor(target.endpoint).stream(modelRequest, signal, (event) => {
      const out = sink ?? open();
      if (event.type === "usage") onUsage(event.usage);
      for (const rendered of renderer.accept(event)) out.send(rendered);
    });
    (sink ?? open()).end();
  } catch (error) {
    if (!sink) throw error;
    sink.fail(toMessagesApiError(error), o.log);
  }
}

interface Sink {
  send(event: StreamEvent): void;
  end(): void;
  fail(error: MessagesApiError, log: Logger): void;
}

function sseSink(res: ServerResponse): Sink {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const write = (type: string, data: object) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  // A reasoning model may stay silent for minutes; pings keep proxies and the client's idle timer from giving up.
  const ping = setInterval(() => write("ping", { type: "ping" }), PING_INTERVAL_MS);
  res.once("close", () => clearInterval(ping));
  return {
    send: (event) => write(event.type, event),
    end: () => res.end(),
    // Headers are out: a failure now is an `error` event, which Anthropic clients treat like the HTTP error.
    fail(error, log) {
      // A client that went away aborted the call itself: nothing to tell it.
      if (res.destroyed) return;
      log.warn("messages stream failed", { error_type: error.type, error: error.message });
      write("error", error.body());
      res.end();
    },
  };
}

function jsonSink(res: ServerResponse): Sink {
  const assembler = new MessageAssembler();
  return {
    send: (event) => assembler.accept(event),
    end: () => sendJson(res, 200, assembler.result()),
    fail: (error, log) => sendError(res, error, log),
  };
}

async function serveCountTokens(
  ctx: Koa.Context,
  raw: Record<string, unknown>,
  resolve: (name: string) => MessagesModel,
  o: MessagesApiOptions,
): Promise<void> {
  const request = parse(countTokensRequestSchema, raw);
  const target = resolve(request.model);
  if (target.endpoint.kind === "anthropic") {
    return passThrough(passThroughCall(ctx, raw, target, abortOnClose(ctx.res)), ctx.res);
  }
  // Other endpoints have no counting API: their tokenizer where one is known, else an estimate (count-tokens.ts).
  const inputTokens = await countTokens(projectRequest(request, target, o.codec), target.endpoint.kind);
  sendJson(ctx.res, 200, { input_tokens: inputTokens });
}

function passThroughCall(ctx: Koa.Context, raw: Record<string, unknown>, target: MessagesModel, signal: AbortSignal) {
  return {
    endpoint: target.endpoint,
    path: ctx.url,
    body: raw,
    model: target.model,
    headers: { version: ctx.get("anthropic-version") || undefined, beta: ctx.get("anthropic-beta") || undefined },
    signal,
  };
}

function recordUsage(usage: Usage, request: MessagesRequest, target: MessagesModel, o: MessagesApiOptions): void {
  o.onUsage(target.model, usage);
  o.log.info("messages usage", { model: request.model, configured_model: target.id, ...usage });
}

/** x-api-key or Authorization: Bearer, compared in constant time (digests have equal length). */
function authenticate(req: IncomingMessage, tokenDigest: Buffer): void {
  const header = req.headers["x-api-key"];
  const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
  const given = typeof header === "string" && header !== "" ? header : bearer;
  if (given === undefined || !timingSafeEqual(digest(given), tokenDigest)) {
    throw new MessagesApiError("authentication_error", "invalid x-api-key (expected the gateway's token)");
  }
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

async function readJson(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const tooLarge = () => new MessagesApiError("request_too_large", `request body exceeds ${limit} bytes`);
  if (Number(req.headers["content-length"] ?? 0) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new MessagesApiError("invalid_request_error", "request body is not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new MessagesApiError("invalid_request_error", "request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function parse<T>(schema: z.ZodType<T>, raw: unknown): T {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new MessagesApiError(
    "invalid_request_error",
    `${issue.path.map(String).join(".") || "body"}: ${issue.message}`,
  );
}

function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => controller.abort());
  return controller.signal;
}

function sendError(res: ServerResponse, error: MessagesApiError, log: Logger): void {
  if (error.type === "api_error" || error.type === "overloaded_error") {
    log.warn("messages request failed", { error_type: error.type, error: error.message });
  }
  if (res.headersSent) return void res.end();
  sendJson(res, error.status, error.body());
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
