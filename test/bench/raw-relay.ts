// The raw-relay baseline (issue 6): the least a server must do to turn a provider's SSE into Cursor's RunSSE
// frames. RunSSE and BidiAppend as the gateway speaks them, the provider called with the run's own credentials,
// every content delta written as the same text_delta envelope the gateway writes, then turn_ended and the
// end-stream — and nothing else: no state machines, no store, no checkpoints, no tool rounds, no history.
// Run as a child process; prints "raw-relay listening on <url>". Serves /__byok/diagnostics like the gateway.
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { createParser } from "eventsource-parser";
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  AgentClientMessageSchema,
  AgentServerMessageSchema,
  type AgentRunRequest,
  type AgentServerMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema, BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { encodeEndStream } from "../../transport/connect/end-stream.js";
import { encodeEnvelope, EnvelopeReader } from "../../transport/connect/envelope.js";
import { frames } from "../../cursor/frames.js";
import { createDiagnostics } from "../../transport/diagnostics.js";

/** One request_id: frames wait here until its RunSSE response is attached. */
interface Stream {
  res?: ServerResponse;
  pending: Uint8Array[];
  ended: boolean;
}

const streams = new Map<string, Stream>();
// No agent routes here: no request streams.
const diagnostics = createDiagnostics({ streams: () => ({ streams: 0, waiting: 0 }) });

function stream(requestId: string): Stream {
  let s = streams.get(requestId);
  if (!s) streams.set(requestId, (s = { pending: [], ended: false }));
  return s;
}

function write(s: Stream, bytes: Uint8Array, end = false): void {
  if (s.res) {
    if (end) s.res.end(bytes);
    else s.res.write(bytes);
  } else {
    s.pending.push(bytes);
  }
  s.ended ||= end;
}

const frame = (message: AgentServerMessage): Uint8Array =>
  encodeEnvelope(0, toBinary(AgentServerMessageSchema, message));

async function runSse(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const [envelope] = new EnvelopeReader().push(await readAll(req));
  const { requestId } = fromBinary(BidiRequestIdSchema, envelope!.payload);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" });
  res.flushHeaders();
  const s = stream(requestId);
  s.res = res;
  for (const bytes of s.pending.splice(0)) res.write(bytes);
  if (s.ended) res.end();
  res.on("close", () => streams.delete(requestId));
}

async function bidiAppend(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const append = fromBinary(BidiAppendRequestSchema, await readAll(req));
  const message = fromBinary(AgentClientMessageSchema, Buffer.from(append.data, "hex"));
  res.writeHead(200, { "content-type": "application/proto" }).end();
  if (message.message.case === "runRequest") callProvider(stream(append.requestId!.requestId), message.message.value);
}

function callProvider(s: Stream, run: AgentRunRequest): void {
  const credentials = run.requestedModel?.credentials;
  if (credentials?.case !== "apiKeyCredentials") throw new Error("raw relay: the run carries no api-key credentials");
  const action = run.action?.action;
  const text = action?.case === "userMessageAction" ? (action.value.userMessage?.text ?? "") : "";
  const body = JSON.stringify({
    model: run.requestedModel!.modelId,
    messages: [{ role: "user", content: text }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const req = request(`${credentials.value.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${credentials.value.apiKey}` },
  });
  req.on("response", (providerRes) => {
    const parser = createParser({
      onEvent: (event) => {
        if (event.data === "[DONE]") return;
        const content = (JSON.parse(event.data) as { choices: Array<{ delta?: { content?: string } }> }).choices[0]
          ?.delta?.content;
        if (content) write(s, frame(frames.textDelta(content)));
      },
    });
    providerRes.setEncoding("utf8");
    providerRes.on("data", (text: string) => parser.feed(text));
    providerRes.on("end", () => {
      write(s, frame(frames.turnEnded({ inputTokens: 100, outputTokens: 10 })));
      write(s, encodeEndStream({ ok: true }), true);
    });
  });
  req.end(body);
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

const server = createServer((req, res) => {
  const path = (req.url ?? "").split("?")[0];
  const route =
    path === "/agent.v1.AgentService/RunSSE"
      ? runSse
      : path === "/aiserver.v1.BidiService/BidiAppend"
        ? bidiAppend
        : path === "/__byok/diagnostics"
          ? async () =>
              void res
                .writeHead(200, { "content-type": "application/json" })
                .end(JSON.stringify(diagnostics.read((req.url ?? "").includes("reset=1"))))
          : async () => void res.writeHead(404).end();
  route(req, res).catch((err: unknown) => {
    if (!res.headersSent) res.writeHead(500).end(String(err));
    else res.destroy();
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`raw-relay listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => process.exit(0));
