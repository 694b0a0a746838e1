// Relay of every non-agent route to the real Cursor backend (docs/protocol/cursor-transport.md §8.3). Cursor sends
// model lists, auth, metadata and more to whatever backend it is pointed at, so anything we do not serve ourselves must
// reach the upstream unchanged: streamed both ways, bytes untouched (no decompression), upstream statuses passed
// through. Only a failure to reach the upstream is answered locally, so a 404 the client sees is always the upstream's.
import { request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { constants, type ClientHttp2Stream, type IncomingHttpHeaders } from "node:http2";
import { request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import { pipeline, type Readable } from "node:stream";
import type { Context } from "koa";
import type { Logger } from "../log/logger.js";
import { TOKEN_HEADER } from "./gate.js";
import { headerObject, Http2Upstream, rawHeaders } from "./relay-h2.js";

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

/** An upstream answer whose head the caller does not pass on: its status and its body, streaming. */
export interface UpstreamResponse {
  status: number;
  body: Readable;
}

/** One request as the relay reads it: Koa's context has these, and so has a request relayed ahead of Koa. */
export interface RelayedRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** The request target as received (path and query). */
  originalUrl: string;
  /** Its path, for the log line. */
  path: string;
}

/** After the bytes a handler already read: the request is complete ("end"), or the rest still streams ("follow"). */
export type BodyRest = "end" | "follow";

export interface Relay {
  /**
   * Relays the request, over HTTP/2 when it arrived over HTTP/2. `body` stands for what the handler has already
   * read of the request stream: the whole of it, or (`rest` "follow") its start, the rest streaming after it.
   */
  pass(ctx: Context, body?: Uint8Array, rest?: BodyRest): Promise<void>;
  /** The same for a request no handler read and no Koa context answers (transport/app.ts). */
  passRequest(request: RelayedRequest): Promise<void>;
  /**
   * Opens the same request upstream, over HTTP/2 when it arrived over HTTP/2, for a response whose head this gateway
   * already wrote (a RunSSE handed over to the upstream): resolves with the upstream's status and body, or rejects
   * when the upstream cannot be reached.
   */
  open(ctx: Context, body: Uint8Array): Promise<UpstreamResponse>;
  /**
   * Sends further bodies upstream as requests like this one (same method, path and end-to-end headers), one after
   * another once each is answered; their answers are only logged (the client was answered already).
   */
  replay(ctx: Context, bodies: readonly Uint8Array[]): Promise<void>;
  /** Closes the HTTP/2 upstream session (shutdown). */
  close(): void;
}

export function createRelay(opts: { upstream: string; log: Logger }): Relay {
  const upstream = new URL(opts.upstream);
  if (upstream.protocol !== "http:" && upstream.protocol !== "https:") {
    throw new Error(`upstream must be an http(s) URL, got ${upstream.protocol}`);
  }
  const basePath = upstream.pathname.replace(/\/$/, "");
  const send = upstream.protocol === "https:" ? httpsRequest : httpRequest;
  const { log } = opts;

  const h2 = new Http2Upstream(upstream);

  const requestFor = (ctx: RelayedRequest, body: Uint8Array | undefined, rest: BodyRest = "end"): ClientRequest => {
    const upstreamReq = send({
      protocol: upstream.protocol,
      hostname: upstream.hostname,
      port: upstream.port,
      method: ctx.req.method,
      path: basePath + ctx.originalUrl,
      headers: [...endToEndHeaders(ctx.req.rawHeaders), "host", upstream.host],
    });
    if (body && rest === "end") upstreamReq.end(body);
    else if (body) {
      upstreamReq.write(body);
      pipeline(ctx.req, upstreamReq, () => {});
    } else if (hasNoBody(ctx.req))
      upstreamReq.end(); // most relayed calls are small GETs: no stream plumbing for them
    else pipeline(ctx.req, upstreamReq, () => {});
    // A client that leaves before the upstream answers must not keep the upstream call alive.
    ctx.res.once("close", () => {
      if (!ctx.res.writableFinished) upstreamReq.destroy();
    });
    return upstreamReq;
  };

  const passRequest = (ctx: RelayedRequest, body?: Uint8Array, rest?: BodyRest) =>
    new Promise<void>((resolve) => {
      if (ctx.req.httpVersionMajor === 2) return passHttp2(h2, basePath, log, ctx, body, rest).then(resolve);
      const { req, res } = ctx;
      const started = performance.now();
      const fields = () => ({
        method: req.method,
        path: ctx.path,
        durationMs: Math.round(performance.now() - started),
      });
      let responded = false;
      const upstreamReq = requestFor(ctx, body, rest);

      upstreamReq.once("response", (upstreamRes: IncomingMessage) => {
        responded = true;
        log.info("relay", { ...fields(), status: upstreamRes.statusCode });
        res.writeHead(upstreamRes.statusCode!, upstreamRes.statusMessage, endToEndHeaders(upstreamRes.rawHeaders));
        sendSoon(res, upstreamRes);
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
    new Promise<UpstreamResponse>((resolve, reject) => {
      const fields = { method: ctx.req.method, path: ctx.path };
      if (ctx.req.httpVersionMajor === 2) {
        const stream = h2.request(
          ctx.req.method ?? "POST",
          basePath + ctx.originalUrl,
          headerObject(endToEndHeaders(ctx.req.rawHeaders)),
        );
        stream.once("response", (head) => {
          const status = Number(head[constants.HTTP2_HEADER_STATUS]);
          log.info("relay", { ...fields, status, protocol: "h2" });
          resolve({ status, body: stream });
        });
        stream.once("error", reject);
        ctx.res.once("close", () => {
          if (!ctx.res.writableFinished) stream.close(constants.NGHTTP2_CANCEL);
        });
        return void stream.end(body);
      }
      const upstreamReq = requestFor(ctx, body);
      upstreamReq.once("response", (upstreamRes: IncomingMessage) => {
        log.info("relay", { ...fields, status: upstreamRes.statusCode });
        resolve({ status: upstreamRes.statusCode ?? 0, body: upstreamRes });
      });
      upstreamReq.once("error", reject);
    });

  /** One more request like ctx's, with `body` and its own length; resolves with the upstream status (0: none). */
  const sendLike = (ctx: Context, body: Uint8Array) =>
    new Promise<number>((resolve) => {
      const method = ctx.req.method ?? "POST";
      const path = basePath + ctx.originalUrl;
      const headers = [...ownBodyHeaders(ctx.req.rawHeaders), "content-length", String(body.byteLength)];
      const failed = (err: Error) => {
        log.error("relay upstream unreachable", { method, path: ctx.path, error: err });
        resolve(0);
      };
      if (ctx.req.httpVersionMajor === 2) {
        let stream: ClientHttp2Stream;
        try {
          stream = h2.request(method, path, headerObject(headers));
        } catch (err) {
          return failed(err as Error);
        }
        stream.once("response", (head) => {
          stream.resume();
          stream.once("end", () => resolve(Number(head[constants.HTTP2_HEADER_STATUS])));
        });
        stream.once("error", failed);
        return void stream.end(body);
      }
      const req = send({
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method,
        path,
        headers: [...headers, "host", upstream.host],
      });
      req.once("response", (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
      });
      req.once("error", failed);
      req.end(body);
    });

  const replay = async (ctx: Context, bodies: readonly Uint8Array[]) => {
    for (const body of bodies) {
      const status = await sendLike(ctx, body);
      log.info("relay", { method: ctx.req.method, path: ctx.path, status, replayed: true });
    }
  };

  const pass = (ctx: Context, body?: Uint8Array, rest?: BodyRest) => {
    ctx.respond = false;
    return passRequest(ctx, body, rest);
  };

  return { pass, passRequest, open, replay, close: () => h2.close() };
}

/**
 * One call relayed over the shared HTTP/2 session: request body and response body stream as they come, the
 * response trailers are passed on, and a client that leaves cancels the upstream stream.
 */
function passHttp2(
  h2: Http2Upstream,
  basePath: string,
  log: Logger,
  ctx: RelayedRequest,
  body: Uint8Array | undefined,
  rest: BodyRest = "end",
): Promise<void> {
  const { req, res } = ctx;
  const started = performance.now();
  const fields = () => ({ method: req.method, path: ctx.path, durationMs: Math.round(performance.now() - started) });
  return new Promise<void>((resolve) => {
    let upstream: ClientHttp2Stream;
    try {
      upstream = h2.request(
        req.method ?? "GET",
        basePath + ctx.originalUrl,
        headerObject(endToEndHeaders(req.rawHeaders)),
      );
    } catch (err) {
      log.error("relay upstream unreachable", { ...fields(), error: err });
      answerUnreachable(res, err as Error);
      return resolve();
    }
    if (body) upstream.write(body);
    if (body && rest === "end") upstream.end();
    else pipeline(req, upstream, () => {});
    res.once("close", () => {
      if (!res.writableFinished) upstream.close(constants.NGHTTP2_CANCEL);
    });
    let responded = false;
    upstream.once("response", (headers) => {
      responded = true;
      const status = Number(headers[constants.HTTP2_HEADER_STATUS]);
      log.info("relay", { ...fields(), status, protocol: "h2" });
      res.writeHead(status, endToEndHeaders(rawHeaders(headers)));
      res.flushHeaders();
      // Trailers come before the end of the body, so they are set in time for the response's own end.
      upstream.once("trailers", (trailers) => res.addTrailers(Object.fromEntries(pairs(trailers))));
      pipeline(upstream, res, (err) => {
        if (err) log.warn("relay response interrupted", { ...fields(), error: err });
        resolve();
      });
    });
    upstream.once("error", (err) => {
      if (responded) return;
      if (res.destroyed) log.warn("relay canceled by client", { ...fields(), error: err });
      else {
        log.error("relay upstream unreachable", { ...fields(), error: err });
        answerUnreachable(res, err);
      }
      resolve();
    });
  });
}

/**
 * The response head leaves with the first body bytes, or on its own one event-loop turn later when none came by
 * then: a small answer (head, body and end read together) is one socket write instead of three, and a streamed one
 * still gets its head at once (docs/performance.md).
 */
function sendSoon(res: ServerResponse, body: Readable): void {
  let started = false;
  body.once("data", () => {
    started = true;
  });
  res.cork();
  setImmediate(() => {
    if (!started && !res.writableEnded) res.flushHeaders();
    res.uncork();
  });
}

/** End-to-end trailer fields as [name, value] pairs. */
function pairs(headers: IncomingHttpHeaders): Array<[string, string]> {
  const raw = endToEndHeaders(rawHeaders(headers));
  const out: Array<[string, string]> = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i]!, raw[i + 1]!]);
  return out;
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

/** End-to-end headers without those that describe the original body (a replayed request has its own). */
function ownBodyHeaders(raw: string[]): string[] {
  const kept = endToEndHeaders(raw);
  const out: string[] = [];
  for (let i = 0; i < kept.length; i += 2) {
    const name = kept[i]!.toLowerCase();
    if (name !== "content-length" && name !== "content-encoding") out.push(kept[i]!, kept[i + 1]!);
  }
  return out;
}

function answerUnreachable(res: ServerResponse, err: Error): void {
  const body = JSON.stringify({ code: "unavailable", message: `upstream unreachable: ${err.message}` });
  res.writeHead(502, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
