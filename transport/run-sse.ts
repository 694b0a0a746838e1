// RunSSE (Connect server stream, seed 000 §1.2, §15, 003 §16.4, §26.2): the request is one enveloped
// BidiRequestId; the response is the request's RequestStream as 5-byte envelopes, the end-stream JSON last, then
// the body ends. Labelled text/event-stream as the captures show. Frames of 1 KiB or more are gzipped when the
// client accepts it.
import type { Context } from "koa";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { gzipSync } from "node:zlib";
import { AgentServerMessageSchema, type AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { BidiRequestIdSchema } from "../proto/gen/aiserver/v1/aiserver_pb.js";
import type { AgentService } from "../engine/agent-service.js";
import { frames } from "./cursor/frames.js";
import { encodeEndStream, type EndStream } from "./connect/end-stream.js";
import { decodePayload, encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "./connect/envelope.js";
import { ConnectError } from "./connect/errors.js";
import { readBody } from "./body.js";

const MAX_REQUEST_BYTES = 64 * 1024;
const COMPRESS_MIN_BYTES = 1024;

export function runSseHandler(service: AgentService) {
  return async (ctx: Context): Promise<void> => {
    const gzip = acceptsGzip(ctx.get("connect-accept-encoding"));
    const res = ctx.res;
    ctx.respond = false;
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
      ...(gzip ? { "connect-content-encoding": "gzip" } : {}),
    });
    res.flushHeaders();
    let requestId: string;
    try {
      requestId = await readRequestId(ctx);
    } catch (e) {
      const error = e instanceof ConnectError ? e : new ConnectError(String(e), "invalid_argument");
      res.end(encodeEndStream({ ok: false, error }));
      return;
    }
    // Frames produced in the same event-loop turn (a provider read often carries many deltas) leave in one
    // write: one syscall and one TCP segment instead of one per frame. end() flushes whatever is still corked.
    let corked = false;
    const write = (message: AgentServerMessage) => {
      if (res.writableEnded) return;
      if (!corked) {
        corked = true;
        res.cork();
        setImmediate(() => {
          corked = false;
          res.uncork();
        });
      }
      res.write(encodeFrame(message, gzip));
    };
    let detach: () => void = () => {};
    const ended = new Promise<void>((resolve) => {
      const finish = () => {
        detach();
        resolve();
      };
      res.on("close", finish);
      detach = service.subscribe(requestId, {
        frame: write,
        heartbeat: () => write(frames.heartbeat()),
        end: (end: EndStream) => {
          // The client ends the call when the body ends, not at the end-stream frame: end both together.
          if (!res.writableEnded) res.end(encodeEndStream(end));
        },
      });
    });
    await ended;
  };
}

async function readRequestId(ctx: Context): Promise<string> {
  const body = await readBody(ctx.req, MAX_REQUEST_BYTES);
  const reader = new EnvelopeReader({ maxPayloadBytes: MAX_REQUEST_BYTES });
  const envelopes = reader.push(body);
  reader.end();
  if (envelopes.length !== 1) throw new ConnectError(`RunSSE expects exactly one request message, got ${envelopes.length}`, "invalid_argument");
  const encoding = ctx.get("connect-content-encoding") === "gzip" ? "gzip" : "identity";
  const payload = decodePayload(envelopes[0]!, encoding, MAX_REQUEST_BYTES);
  let requestId: string;
  try {
    requestId = fromBinary(BidiRequestIdSchema, payload).requestId;
  } catch (e) {
    throw new ConnectError(`RunSSE request is not a valid BidiRequestId: ${(e as Error).message}`, "invalid_argument");
  }
  if (!requestId) throw new ConnectError("RunSSE request carries no request_id", "invalid_argument");
  return requestId;
}

function encodeFrame(message: AgentServerMessage, gzip: boolean): Uint8Array {
  const payload = toBinary(AgentServerMessageSchema, message);
  if (gzip && payload.length >= COMPRESS_MIN_BYTES) return encodeEnvelope(EnvelopeFlags.compressed, gzipSync(payload));
  return encodeEnvelope(0, payload);
}

function acceptsGzip(header: string): boolean {
  return header.split(",").some((v) => v.trim() === "gzip");
}
