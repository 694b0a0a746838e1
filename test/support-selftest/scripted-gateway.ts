// For the harness's own tests only: a bare HTTP server that plays the gateway's wire side by hand, so the Cursor
// client can be checked without the real gateway. Each test scripts what RunSSE sends and reads what was appended.
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { ServerResponse } from "node:http";
import { gzipSync } from "node:zlib";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  AgentServerMessageSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema, BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { listenOnLoopback, readBody, waitUntil } from "../support/util.js";

export type ServerMessageInit = MessageInitShape<typeof AgentServerMessageSchema>["message"];

export interface ScriptedStream {
  requestId: string;
  send(message: ServerMessageInit, opts?: { gzip?: boolean }): void;
  /** Writes the end-stream envelope with this JSON and ends the body. */
  end(json?: string): void;
  raw(bytes: Uint8Array): void;
  /** Ends the body cleanly without an end-stream envelope. */
  close(): void;
  destroy(): void;
}

export interface ReceivedAppend {
  requestId: string;
  seqno: bigint;
  message: AgentClientMessage;
}

export interface ScriptedGateway {
  url: string;
  appends: ReceivedAppend[];
  /** Called for each RunSSE; the response headers are already sent (gzip-capable when the client accepts it). */
  onRunSse(handler: (stream: ScriptedStream) => void): void;
  /** Resolves with the appends matching `pred` once there are at least `count` of them. */
  waitForAppends(pred: (a: ReceivedAppend) => boolean, count?: number): Promise<ReceivedAppend[]>;
  close(): Promise<void>;
}

export async function startScriptedGateway(): Promise<ScriptedGateway> {
  const appends: ReceivedAppend[] = [];
  let runSse: (stream: ScriptedStream) => void = (s) => s.end();

  const server = await listenOnLoopback(async (req, res) => {
    const body = await readBody(req);
    if (req.url === "/aiserver.v1.BidiService/BidiAppend") {
      const append = fromBinary(BidiAppendRequestSchema, body);
      appends.push({
        requestId: append.requestId?.requestId ?? "",
        seqno: append.appendSeqno,
        message: fromBinary(AgentClientMessageSchema, Buffer.from(append.data, "hex")),
      });
      res.writeHead(200, { "content-type": "application/proto" });
      return void res.end();
    }
    if (req.url === "/agent.v1.AgentService/RunSSE") {
      const [envelope] = new EnvelopeReader().push(body);
      const gzip = req.headers["connect-accept-encoding"] === "gzip";
      res.writeHead(200, {
        "content-type": "text/event-stream",
        ...(gzip ? { "connect-content-encoding": "gzip" } : {}),
      });
      res.flushHeaders();
      return runSse(scriptedStream(res, fromBinary(BidiRequestIdSchema, envelope!.payload).requestId));
    }
    res.writeHead(404).end();
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    appends,
    onRunSse: (handler) => void (runSse = handler),
    waitForAppends: async (pred, count = 1) => {
      await waitUntil(
        () => appends.filter(pred).length >= count,
        5_000,
        () => `expected ${count} matching appends, have ${appends.length} appends`,
      );
      return appends.filter(pred);
    },
    close: () => server.close(),
  };
}

function scriptedStream(res: ServerResponse, requestId: string): ScriptedStream {
  return {
    requestId,
    send: (message, opts) => {
      const payload = toBinary(AgentServerMessageSchema, create(AgentServerMessageSchema, { message }));
      res.write(opts?.gzip ? encodeEnvelope(EnvelopeFlags.compressed, gzipSync(payload)) : encodeEnvelope(0, payload));
    },
    end: (json = "{}") => void res.end(encodeEnvelope(EnvelopeFlags.endStream, new TextEncoder().encode(json))),
    raw: (bytes) => void res.write(bytes),
    close: () => void res.end(),
    // Flushes what was written, then closes the connection without the terminating chunk.
    destroy: () => void res.socket?.end(),
  };
}

/** The client-message oneof case names of appends, e.g. "kv:setBlobResult", "exec:readResult", "control:streamClose". */
export function appendKinds(appends: readonly ReceivedAppend[]): string[] {
  return appends.map(({ message: { message: m } }) => {
    switch (m.case) {
      case "kvClientMessage":
        return `kv:${m.value.message.case}`;
      case "execClientMessage":
        return m.value.message.case === "shellStream"
          ? `shell:${m.value.message.value.event.case}`
          : `exec:${m.value.message.case}`;
      case "execClientControlMessage":
        return `control:${m.value.message.case}`;
      default:
        return m.case ?? "empty";
    }
  });
}
