// Relay of every non-agent route to the real Cursor backend (docs/protocol/cursor-transport.md §8.3). Cursor sends
// model lists, auth, metadata and more to whatever backend it is pointed at, so anything we do not serve ourselves must
// reach the upstream unchanged: streamed both ways, bytes untouched (no decompression), upstream statuses passed
// through. Only a failure to reach the upstream is answered locally, so a 404 the client sees is always the upstream's.
import { request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import { pipeline } from "node:stream";
import type { Context } from "koa";
import type { Logger } from "../log/logger.js";
import { TOKEN_HEADER } from "./gate.js";

// RFC 9110 §7.6.1 connection-specific headers, plus `proxy-*` and HTTP/2's `http2-settings`.
const hopByHop = new Set([
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  // The gateway's own token (transport/gate.ts) is for this hop only: it never leaves for the upstream.
  TOKEN_HEADER,
]);

export interface Relay {
  /** Relays the request; `body` replaces the request stream when the handler has already read it. */
  pass(ctx: Context, body?: Uint8Array): Promise<void>;
  /**
   * Opens the same request upstream for a response whose head this gateway already wrote (a RunSSE handed over
   * to the upstream): resolves with the upstream response, or rejects when the upstream cannot be reached.
   */
  open(ctx: Context, body: Uint8Array): Promise<IncomingMessage>;
}

export function createRelay(opts: { upstream: string; log: Logger }): Relay {
  const upstream = new URL(opts.upstream);
  if (upstream.protocol !== "http:" && upstream.protocol !== "https:") {
    throw new Error(`upstream must be an http(s) URL, got ${upstream.protocol}`);
  }
  const basePath = upstream.pathname.replace(/\/$/, "");
  const send = upstream.protocol === "https:" ? httpsRequest : httpRequest;
  const { log } = opts;

  const requestFor = (ctx: Context, body: Uint8Array | undefined): ClientRequest => {
    const upstreamReq = send({
      protocol: upstream.protocol,
      hostname: upstream.hostname,
      port: upstream.port,
      method: ctx.req.method,
      path: basePath + ctx.originalUrl,
      headers: [...endToEndHeaders(ctx.req.rawHeaders), "host", upstream.host],
    });
    if (body) upstreamReq.end(body);
    else if (hasNoBody(ctx.req))
      upstreamReq.end(); // most relayed calls are small GETs: no stream plumbing for them
    else pipeline(ctx.req, upstreamReq, () => {});
    // A client that leaves before the upstream answers must not keep the upstream call alive.
    ctx.res.once("close", () => {
      if (!ctx.res.writableFinished) upstreamReq.destroy();
    });
    return upstreamReq;
  };

  const pass = (ctx: Context, body?: Uint8Array) =>
    new Promise<void>((resolve) => {
      const { req, res } = ctx;
      const started = performance.now();
      const fields = () => ({
        method: req.method,
        path: ctx.path,
        durationMs: Math.round(performance.now() - started),
      });
      let responded = false;
      ctx.respond = false;
      const upstreamReq = requestFor(ctx, body);

      upstreamReq.once("response", (upstreamRes: IncomingMessage) => {
        responded = true;
        log.info("relay", { ...fields(), status: upstreamRes.statusCode });
        res.writeHead(upstreamRes.statusCode!, upstreamRes.statusMessage, endToEndHeaders(upstreamRes.rawHeaders));
        res.flushHeaders();
        copyResponse(upstreamRes, res, (err) => {
          if (err) log.warn("relay response interrupted", { ...fields(), error: err });
          resolve();
        });
      });

      // Every failure before the response head lands here, including a client abort (the request pipeline and
      // the close handler destroy upstreamReq); after the head, the response pipeline reports instead.
      upstreamReq.on("error", (err) => {
        if (responded) return;
        if (res.destroyed) {
          log.warn("relay canceled by client", { ...fields(), error: err });
        } else {
          log.error("relay upstream unreachable", { ...fields(), error: err });
          answerUnreachable(res, err);
        }
        resolve();
      });
    });

  const open = (ctx: Context, body: Uint8Array) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const upstreamReq = requestFor(ctx, body);
      upstreamReq.once("response", (upstreamRes: IncomingMessage) => {
        log.info("relay", { method: ctx.req.method, path: ctx.path, status: upstreamRes.statusCode });
        resolve(upstreamRes);
      });
      upstreamReq.once("error", reject);
    });

  return { pass, open };
}

/** An HTTP/1.x request that declares no body (HTTP/2 may stream one without either header). */
function hasNoBody(req: IncomingMessage): boolean {
  return (
    req.httpVersionMajor === 1 &&
    req.headers["content-length"] === undefined &&
    req.headers["transfer-encoding"] === undefined
  );
}

/**
 * The upstream body into the client response, with pipeline's guarantees (both sides destroyed on a failure of
 * either, one callback) but without its per-call AbortController and end-of-stream machinery.
 */
function copyResponse(from: IncomingMessage, to: ServerResponse, done: (err?: Error) => void): void {
  let settled = false;
  const settle = (err?: Error) => {
    if (settled) return;
    settled = true;
    done(err);
  };
  from.once("error", (err) => {
    to.destroy();
    settle(err);
  });
  from.once("aborted", () => {
    to.destroy();
    settle(new Error("upstream response aborted"));
  });
  to.once("close", () => {
    if (to.writableFinished) return settle();
    from.destroy();
    settle(new Error("client closed the response before it ended"));
  });
  from.pipe(to);
}

/** Flat raw header list (name, value, ...) without hop-by-hop headers, HTTP/2 pseudo-headers or Host. */
function endToEndHeaders(raw: string[]): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === "connection") {
      for (const token of raw[i + 1]!.split(",")) named.add(token.trim().toLowerCase());
    }
  }
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const drop =
      hopByHop.has(name) || name.startsWith("proxy-") || name.startsWith(":") || name === "host" || named.has(name);
    if (!drop) kept.push(raw[i]!, raw[i + 1]!);
  }
  return kept;
}

function answerUnreachable(res: ServerResponse, err: Error): void {
  const body = JSON.stringify({ code: "unavailable", message: `upstream unreachable: ${err.message}` });
  res.writeHead(502, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
