// The two HTTP calls Cursor makes, spoken with node:http and the project's envelope codec — never through the
// gateway's own handlers. RunSSE: Connect server-stream, request = one envelope holding BidiRequestId, response =
// envelopes (0x01 gzip, 0x02 end-stream JSON) under content-type text/event-stream or application/connect+proto
// (docs/protocol/cursor-transport.md §1). BidiAppend: Connect unary with a binary proto body
// (docs/protocol/cursor-transport.md §3).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { request, type IncomingMessage } from "node:http";
import {
  AgentServerMessageSchema,
  type AgentClientMessage,
  AgentClientMessageSchema,
  type AgentServerMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import {
  BidiAppendRequestSchema,
  BidiRequestIdSchema,
  ErrorDetailsSchema,
} from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { decodePayload, encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { parseEndStream } from "../../transport/connect/end-stream.js";
import type { RunEnd } from "./observed-frames.js";

export const runSsePath = "/agent.v1.AgentService/RunSSE";
export const bidiAppendPath = "/aiserver.v1.BidiService/BidiAppend";

const streamContentTypes = ["text/event-stream", "application/connect+proto"];

export interface RunSseEvents {
  message(message: AgentServerMessage, compressed: boolean): void;
  end(end: RunEnd): void;
  /** The body stopped without a valid end-stream (server closed, bad framing, HTTP error). */
  broken(end: Extract<RunEnd, { ok: false }>): void;
  /** Wire misbehaviour after the end was already reported (the stock Connect client would fail the call). */
  violation(detail: string): void;
}

/** Connect clients finish a call when the body ends, not at the end-stream frame (docs/protocol/cursor-transport.md
 * §2.4). */
const bodyCloseGraceMs = 2_000;

export interface RunSseConnection {
  /** Resolves once response headers arrived (or the call failed). */
  headers: Promise<void>;
  /** Drops the HTTP response as a client losing its connection would. */
  drop(): void;
}

export function openRunSse(
  baseUrl: string,
  requestId: string,
  opts: { acceptGzip: boolean; headers?: Record<string, string> },
  on: RunSseEvents,
): RunSseConnection {
  let dropped = false;
  let finished = false;
  const finish = (report: () => void): void => {
    if (finished || dropped) return;
    finished = true;
    report();
  };
  const broken = (code: string, message: string): void => finish(() => on.broken({ ok: false, code, message }));

  let markHeaders!: () => void;
  const headers = new Promise<void>((resolve) => (markHeaders = resolve));
  const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  const req = request(new URL(runSsePath, baseUrl), {
    method: "POST",
    agent: false,
    headers: {
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
      ...(opts.acceptGzip ? { "connect-accept-encoding": "gzip" } : {}),
      ...opts.headers,
    },
  });
  req.on("response", (res) => {
    markHeaders();
    void readStream(res, on, finish, broken);
  });
  req.on("error", (err) => {
    markHeaders();
    broken("missing_end_stream", `RunSSE request failed: ${err.message}`);
  });
  req.end(body);

  return {
    headers,
    drop: () => {
      dropped = true;
      req.destroy();
    },
  };
}

async function readStream(
  res: IncomingMessage,
  on: RunSseEvents,
  finish: (report: () => void) => void,
  broken: (code: string, message: string) => void,
): Promise<void> {
  if (res.statusCode !== 200) {
    return broken(`http_${res.statusCode}`, (await readAll(res)).toString("utf8"));
  }
  const contentType = (res.headers["content-type"] ?? "").split(";")[0]!.trim();
  if (!streamContentTypes.includes(contentType)) {
    return broken("client_protocol_error", `RunSSE answered with content-type ${JSON.stringify(contentType)}`);
  }
  const encodingHeader = res.headers["connect-content-encoding"] ?? "identity";
  if (encodingHeader !== "gzip" && encodingHeader !== "identity") {
    return broken("client_protocol_error", `unsupported connect-content-encoding ${encodingHeader}`);
  }
  const reader = new EnvelopeReader();
  let ended = false;
  let lingering: NodeJS.Timeout | undefined;
  const decode = <T>(step: () => T): T => {
    try {
      return step();
    } catch (err) {
      throw new ClientProtocolError((err as Error).message);
    }
  };
  try {
    for await (const chunk of res) {
      for (const env of decode(() => reader.push(chunk as Buffer))) {
        if (ended) {
          on.violation("RunSSE sent an envelope after the end-stream");
          continue;
        }
        const payload = decode(() => decodePayload(env, encodingHeader));
        if (env.flags & EnvelopeFlags.endStream) {
          ended = true;
          const end = decode(() => toRunEnd(parseEndStream(payload)));
          finish(() => on.end(end));
          lingering = setTimeout(
            () => on.violation(`RunSSE body stayed open ${bodyCloseGraceMs} ms after the end-stream`),
            bodyCloseGraceMs,
          );
        } else {
          on.message(
            decode(() => fromBinary(AgentServerMessageSchema, payload)),
            (env.flags & EnvelopeFlags.compressed) !== 0,
          );
        }
      }
    }
    decode(() => reader.end());
    if (!ended) broken("missing_end_stream", "RunSSE body ended without an end-stream envelope");
  } catch (err) {
    const why = `RunSSE stream broke: ${(err as Error).message}`;
    if (ended) on.violation(why);
    else broken(err instanceof ClientProtocolError ? "client_protocol_error" : "missing_end_stream", why);
  } finally {
    clearTimeout(lingering);
  }
}

/** Bytes that a Connect client could not decode, as opposed to a connection that went away. */
class ClientProtocolError extends Error {}

function toRunEnd(parsed: ReturnType<typeof parseEndStream>): RunEnd {
  if (parsed.error === undefined) return { ok: true };
  const detail = parsed.error.details.find((d) => d.type === "aiserver.v1.ErrorDetails");
  return {
    ok: false,
    code: parsed.error.code,
    message: parsed.error.message,
    errorDetails: detail ? fromBinary(ErrorDetailsSchema, detail.value) : undefined,
  };
}

export interface AppendResponse {
  status: number;
  /** The Connect error JSON of a failed unary call. */
  error?: { code: string; message: string };
}

/** One BidiAppend call; `onSent` fires when the request body has left this process. */
export function postBidiAppend(
  baseUrl: string,
  call: { requestId: string; seqno: bigint; message: AgentClientMessage; headers?: Record<string, string> },
  onSent?: () => void,
): Promise<AppendResponse> {
  const append = create(BidiAppendRequestSchema, {
    data: Buffer.from(toBinary(AgentClientMessageSchema, call.message)).toString("hex"),
    requestId: { requestId: call.requestId },
    appendSeqno: call.seqno,
  });
  return new Promise((resolve) => {
    const req = request(new URL(bidiAppendPath, baseUrl), {
      method: "POST",
      agent: false,
      headers: { "content-type": "application/proto", "connect-protocol-version": "1", ...call.headers },
    });
    req.on("response", async (res) => {
      const body = (await readAll(res)).toString("utf8");
      resolve(res.statusCode === 200 ? { status: 200 } : { status: res.statusCode ?? 0, error: parseUnaryError(body) });
    });
    req.on("error", (err) => resolve({ status: 0, error: { code: "transport", message: err.message } }));
    req.end(toBinary(BidiAppendRequestSchema, append), onSent);
  });
}

function parseUnaryError(body: string): { code: string; message: string } {
  try {
    const json = JSON.parse(body) as { code?: unknown; message?: unknown };
    return { code: String(json.code ?? "unknown"), message: String(json.message ?? "") };
  } catch {
    return { code: "unknown", message: body };
  }
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of res) parts.push(part as Buffer);
  return Buffer.concat(parts);
}
