// RunSSE (Connect server stream, docs/protocol/cursor-transport.md §2, §4, §7.2): the request is one enveloped
// BidiRequestId; the response is the request's RequestStream as 5-byte envelopes, the end-stream JSON last, then
// the body ends. Labelled text/event-stream as the captures show. Frames of 1 KiB or more are gzipped when the
// client accepts it. The stream of a run served upstream is the upstream's own RunSSE.
import type { Context } from "koa";
import { fromBinary } from "@bufbuild/protobuf";
import type { ServerResponse } from "node:http";
import { pipeline } from "node:stream";
import { BidiRequestIdSchema } from "../proto/gen/aiserver/v1/aiserver_pb.js";
import type { AgentBackend } from "./agent-backend.js";
import { encodeEndStream } from "./connect/end-stream.js";
import type { EndStream } from "../cursor/errors.js";
import { decodePayload, EnvelopeFlags, EnvelopeReader } from "./connect/envelope.js";
import { RpcError } from "../cursor/errors.js";
import { type BodyBudget, readBody } from "./body.js";
import type { Relay, UpstreamResponse } from "./relay.js";
import { acceptsGzip, HEARTBEAT, streamWriter } from "./stream-writer.js";

const MAX_REQUEST_BYTES = 64 * 1024;

export function runSseHandler(service: AgentBackend, relay: Relay, budget: BodyBudget) {
  return async (ctx: Context): Promise<void> => {
    let body: Uint8Array;
    let requestId: string;
    const lease = budget.lease();
    try {
      body = await readBody(ctx.req, MAX_REQUEST_BYTES, lease);
      requestId = readRequestId(ctx, body);
    } catch (e) {
      const error = e instanceof RpcError ? e : new RpcError(String(e), "invalid_argument");
      writeHead(ctx, false).end(encodeEndStream({ ok: false, error }));
      return;
    } finally {
      lease.release(); // the request is one small envelope: nothing of it is decoded any further
    }
    if (service.routeOf(requestId) === "upstream") return relay.pass(ctx, body);
    const gzip = acceptsGzip(ctx.get("connect-accept-encoding"));
    const res = writeHead(ctx, gzip);
    const write = streamWriter(res, gzip);
    let detach: () => void = () => {};
    const ended = new Promise<void>((resolve) => {
      const finish = () => {
        detach();
        resolve();
      };
      res.on("close", finish);
      try {
        detach = service.subscribe(requestId, {
          frame: write,
          heartbeat: () => write(HEARTBEAT),
          end: (end: EndStream) => {
            // The client ends the call when the body ends, not at the end-stream frame: end both together.
            if (!res.writableEnded) res.end(encodeEndStream(end));
          },
          handOver: () => {
            detach();
            void followUpstream(ctx, relay, body).finally(resolve);
          },
        });
      } catch (e) {
        // Refused before any frame, e.g. too many streams already waiting for their run_request.
        const error = e instanceof RpcError ? e : new RpcError(String(e), "internal");
        res.end(encodeEndStream({ ok: false, error }));
      }
    });
    await ended;
  };
}

// The head is written at once: the client usually opens RunSSE before it appends the run_request
// (docs/protocol/cursor-transport.md §1, §6).
function writeHead(ctx: Context, gzip: boolean): ServerResponse {
  ctx.respond = false;
  ctx.res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
    ...(gzip ? { "connect-content-encoding": "gzip" } : {}),
  });
  ctx.res.flushHeaders();
  return ctx.res;
}

/**
 * A RunSSE opened before its run_request turned out to be for the upstream: our head is already sent, so the
 * upstream's envelopes are copied into the open body (its gzip flags are valid: it was asked with the client's own
 * Connect-Accept-Encoding), over HTTP/2 when the RunSSE came over HTTP/2. An upstream that refuses or cannot be reached ends the stream with a Connect error.
 */
async function followUpstream(ctx: Context, relay: Relay, body: Uint8Array): Promise<void> {
  const res = ctx.res;
  let upstream: UpstreamResponse;
  try {
    upstream = await relay.open(ctx, body);
  } catch (e) {
    res.end(
      encodeEndStream({
        ok: false,
        error: new RpcError(`upstream unreachable: ${(e as Error).message}`, "unavailable"),
      }),
    );
    return;
  }
  if (upstream.status !== 200) {
    upstream.body.resume();
    res.end(
      encodeEndStream({
        ok: false,
        error: new RpcError(`upstream answered RunSSE with HTTP ${upstream.status}`, "unavailable"),
      }),
    );
    return;
  }
  await new Promise<void>((resolve) => pipeline(upstream.body, res, () => resolve()));
}

function readRequestId(ctx: Context, body: Uint8Array): string {
  const reader = new EnvelopeReader({ maxPayloadBytes: MAX_REQUEST_BYTES });
  const envelopes = reader.push(body);
  reader.end();
  if (envelopes.length !== 1)
    throw new RpcError(`RunSSE expects exactly one request message, got ${envelopes.length}`, "invalid_argument");
  // An end-of-stream envelope carries the EndStream JSON, never a request (docs/protocol/cursor-transport.md §2.2).
  if (envelopes[0]!.flags & EnvelopeFlags.endStream)
    throw new RpcError("protocol error: the RunSSE request envelope has the end-stream flag", "invalid_argument");
  const encoding = ctx.get("connect-content-encoding") === "gzip" ? "gzip" : "identity";
  const payload = decodePayload(envelopes[0]!, encoding, MAX_REQUEST_BYTES);
  let requestId: string;
  try {
    requestId = fromBinary(BidiRequestIdSchema, payload).requestId;
  } catch (e) {
    throw new RpcError(`RunSSE request is not a valid BidiRequestId: ${(e as Error).message}`, "invalid_argument");
  }
  if (!requestId) throw new RpcError("RunSSE request carries no request_id", "invalid_argument");
  return requestId;
}
