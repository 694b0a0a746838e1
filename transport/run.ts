// Run (Connect bidi stream, docs/protocol/cursor-transport.md §1.2): client messages arrive as 5-byte envelopes on
// the request body, server messages leave on the response body, the end-stream JSON last. Frames are read until
// the run_request decides the route. Local: the messages feed the same request stream as BidiAppend would (the
// run_request first, then whatever came before it, then the rest in arrival order) and the response follows it as
// RunSSE would. Upstream: the whole call is relayed, the bytes read so far replayed first, then full duplex.
import type { Context } from "koa";
import { fromBinary } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { AgentClientMessageSchema, type AgentClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { type AgentBackend, parentLinkOf } from "./agent-backend.js";
import { RpcError, type EndStream } from "../cursor/errors.js";
import { encodeEndStream } from "./connect/end-stream.js";
import { decodePayload, type Envelope, EnvelopeFlags, EnvelopeReader } from "./connect/envelope.js";
import type { Relay } from "./relay.js";
import type { BodyBudget, BodyLease } from "./body.js";
import { acceptsGzip, HEARTBEAT, streamWriter } from "./stream-writer.js";

/** Messages a Run may send before its run_request (a prewarm, heartbeats); more is a misbehaving client. */
export const MAX_EARLY_MESSAGES = 64;
/** Links a Run to the request_id later calls (subagents, a reconnecting RunSSE) name. */
const REQUEST_ID_HEADER = "x-request-id";

export function runHandler(
  service: AgentBackend,
  relay: Relay,
  limits: { maxRequestBytes: number; runRequestWaitMs: number; budget: BodyBudget },
) {
  return async (ctx: Context): Promise<void> => {
    const requestId = ctx.get(REQUEST_ID_HEADER) || randomUUID();
    const inbound = new Inbound(ctx, limits.maxRequestBytes, limits.budget);
    try {
      const first = await inbound.untilRunRequest(limits.runRequestWaitMs).catch((e: unknown) => asRpcError(e));
      if (first instanceof RpcError) return void endAtOnce(ctx, first);
      // One HTTP/2 call is one request: its parent headers hold for every message on it.
      const parent = parentLinkOf((name) => ctx.get(name));
      const route = await (async () => service.append(requestId, 1n, first.runRequest, parent))().catch(asRpcError);
      if (route instanceof RpcError) return void endAtOnce(ctx, route);
      if (route === "upstream") return await relay.pass(ctx, inbound.replay(), "follow");
      await serveLocally(ctx, service, requestId, inbound, first.early);
    } finally {
      inbound.release();
    }
  };
}

async function serveLocally(
  ctx: Context,
  service: AgentBackend,
  requestId: string,
  inbound: Inbound,
  early: AgentClientMessage[],
): Promise<void> {
  const gzip = acceptsGzip(ctx.get("connect-accept-encoding"));
  const res = writeHead(ctx, gzip);
  const write = streamWriter(res, gzip);
  const end = (e: EndStream) => {
    if (!res.writableEnded) res.end(encodeEndStream(e));
  };
  let seqno = 1n;
  const deliver = (message: AgentClientMessage) => {
    if (message.message.case === "runRequest")
      throw new RpcError("protocol error: a second run_request on one Run stream", "invalid_argument");
    void service.append(requestId, ++seqno, message); // routed already: admitted at once
  };
  let detach: () => void = () => {};
  await new Promise<void>((resolve) => {
    res.once("close", () => {
      detach();
      inbound.stop();
      resolve();
    });
    // A protocol error after the run started ends the call here; the run itself is canceled behind it.
    const refuse = (e: unknown) => {
      const error = asRpcError(e);
      end({ ok: false, error });
      service.cancel(requestId, error.message);
    };
    detach = service.subscribe(requestId, {
      frame: write,
      heartbeat: () => write(HEARTBEAT),
      end,
      handOver: () => {}, // the route was decided before subscribing
    });
    try {
      for (const message of early) deliver(message);
    } catch (e) {
      return refuse(e);
    }
    inbound.follow(deliver).catch(refuse);
  });
}

/**
 * The request body as Connect envelopes, bounded per frame and, until the route is known, in total; what it holds is
 * charged to the body budget BidiAppend bodies share (docs/protocol/cursor-transport.md §2.5), each byte once: the
 * bytes kept for replay until the route is known, then the incomplete envelope and each chunk's envelopes while
 * they are decoded; inflated payloads on top.
 */
class Inbound {
  private readonly reader: EnvelopeReader;
  private readonly encoding: "gzip" | "identity";
  private readonly raw: Buffer[] = [];
  private rawBytes = 0;
  private readonly held: BodyLease;
  /** The chunk being decoded: its envelopes' payloads and their inflated copies. */
  private decoding: BodyLease | undefined;
  private routed = false;
  /** Envelopes that came in the run_request's chunk, after it: the local route delivers them first. */
  private rest: Envelope[] = [];
  private detach: (() => void) | undefined;

  constructor(
    private readonly ctx: Context,
    private readonly maxBytes: number,
    private readonly budget: BodyBudget,
  ) {
    this.held = budget.lease();
    this.reader = new EnvelopeReader({ maxPayloadBytes: maxBytes });
    this.encoding = ctx.get("connect-content-encoding") === "gzip" ? "gzip" : "identity";
  }

  /**
   * Reads until the run_request, which must come within `waitMs` (as on RunSSE, docs/protocol/cursor-transport.md
   * §6.9); the messages before it are kept (bounded), every byte read is kept for replay.
   */
  untilRunRequest(waitMs: number): Promise<{ runRequest: AgentClientMessage; early: AgentClientMessage[] }> {
    const early: AgentClientMessage[] = [];
    let timer: NodeJS.Timeout | undefined;
    return new Promise<{ runRequest: AgentClientMessage; early: AgentClientMessage[] }>((resolve, reject) => {
      timer = setTimeout(() => {
        this.stop();
        reject(new RpcError("no run_request arrived on this Run stream in time", "deadline_exceeded"));
      }, waitMs);
      this.read({
        keep: (chunk) => {
          this.rawBytes += chunk.length;
          if (this.rawBytes > this.maxBytes)
            throw new RpcError(
              `the Run stream sent over ${this.maxBytes} bytes before its run_request`,
              "resource_exhausted",
            );
          this.held.grow(chunk.length);
          this.raw.push(chunk);
        },
        take: (envelopes) => {
          for (const [i, envelope] of envelopes.entries()) {
            const message = this.decode(envelope);
            if (message.message.case === "runRequest") {
              this.rest = envelopes.slice(i + 1);
              this.stop();
              return resolve({ runRequest: message, early });
            }
            if (early.length >= MAX_EARLY_MESSAGES)
              throw new RpcError(`${MAX_EARLY_MESSAGES} messages arrived before the run_request`, "resource_exhausted");
            early.push(message);
          }
        },
        ended: () => reject(new RpcError("the Run stream ended before its run_request", "invalid_argument")),
        failed: reject,
      });
    }).finally(() => clearTimeout(timer));
  }

  /** Everything read so far, byte for byte (for the upstream); the body stays paused until the relay takes it. */
  replay(): Buffer {
    return Buffer.concat(this.raw);
  }

  /** Hands every further message over as it arrives; rejects on the first bad frame. */
  follow(deliver: (message: AgentClientMessage) => void): Promise<void> {
    this.raw.length = 0;
    this.routed = true;
    this.holdPending();
    return new Promise((resolve, reject) => {
      const take = (envelopes: Envelope[]) => {
        for (const envelope of envelopes) deliver(this.decode(envelope));
      };
      try {
        take(this.rest.splice(0));
      } catch (e) {
        return reject(e);
      }
      this.read({ keep: () => {}, take, ended: resolve, failed: reject });
      this.ctx.req.resume();
    });
  }

  /** Gives back everything charged (the call is over). */
  release(): void {
    this.held.release();
  }

  /** Once routed only the incomplete envelope stays held. */
  private holdPending(): void {
    this.held.release();
    this.held.grow(this.reader.pendingBytes);
  }

  /** Stops reading (routed, failed or the call is gone). */
  stop(): void {
    this.ctx.req.pause();
    this.detach?.();
    this.detach = undefined;
  }

  private read(on: {
    keep: (chunk: Buffer) => void;
    take: (envelopes: Envelope[]) => void;
    ended: () => void;
    failed: (e: unknown) => void;
  }): void {
    const req = this.ctx.req;
    const fail = (e: unknown) => {
      this.stop();
      on.failed(e);
    };
    const onData = (chunk: Buffer) => {
      this.decoding = this.budget.lease();
      try {
        on.keep(chunk);
        const envelopes = this.reader.push(chunk);
        // Each byte is charged once: kept for replay, or pending in the reader, or being decoded.
        if (this.routed) this.holdPending();
        on.take(envelopes);
      } catch (e) {
        fail(e);
      } finally {
        this.decoding.release();
        this.decoding = undefined;
      }
    };
    const onEnd = () => {
      try {
        this.reader.end();
        this.stop();
        on.ended();
      } catch (e) {
        fail(e);
      }
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", fail);
    this.detach = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", fail);
    };
  }

  private decode(envelope: Envelope): AgentClientMessage {
    if (envelope.flags & EnvelopeFlags.endStream)
      throw new RpcError("protocol error: a Run request envelope has the end-stream flag", "invalid_argument");
    if (this.routed) this.decoding?.grow(envelope.payload.byteLength);
    const payload = decodePayload(envelope, this.encoding, this.maxBytes);
    if (payload !== envelope.payload) this.decoding?.grow(payload.byteLength);
    try {
      return fromBinary(AgentClientMessageSchema, payload);
    } catch (e) {
      throw new RpcError(`Run frame is not a valid AgentClientMessage: ${(e as Error).message}`, "invalid_argument");
    }
  }
}

function writeHead(ctx: Context, gzip: boolean): ServerResponse {
  ctx.respond = false;
  ctx.res.writeHead(200, {
    "content-type": "application/connect+proto",
    ...(gzip ? { "connect-content-encoding": "gzip" } : {}),
  });
  ctx.res.flushHeaders();
  return ctx.res;
}

/** Refused before any run: the head and the error end-stream frame together. */
function endAtOnce(ctx: Context, error: RpcError): void {
  writeHead(ctx, false).end(encodeEndStream({ ok: false, error }));
}

function asRpcError(e: unknown): RpcError {
  return e instanceof RpcError ? e : new RpcError(`Run failed: ${(e as Error).message}`, "internal");
}
