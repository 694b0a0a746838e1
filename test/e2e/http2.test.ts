// The same port serves cleartext HTTP/2 (h2c, prior knowledge) next to HTTP/1.1: a Connect client configured for
// HTTP/2 runs a whole turn over one session, with the stock connect-node client for BidiAppend.
import { expect } from "chai";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { randomUUID } from "node:crypto";
import { connect, type ClientHttp2Session } from "node:http2";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AgentClientMessageSchema,
  AgentServerMessageSchema,
  type AgentServerMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiRequestIdSchema, BidiService } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { EnvelopeFlags, EnvelopeReader, encodeEnvelope } from "../../transport/connect/envelope.js";
import { parseEndStream } from "../../transport/connect/end-stream.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";

function h2Request(session: ClientHttp2Session, headers: Record<string, string>, body?: Uint8Array) {
  const stream = session.request(headers);
  stream.end(body ? Buffer.from(body) : undefined);
  return stream;
}

describe("e2e: HTTP/2 cleartext (h2c) on the gateway port", () => {
  let dataDir: string;
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;
  let session: ClientHttp2Session;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-h2-"));
    [openai, upstream] = await Promise.all([startFakeOpenAI(), startFakeUpstream()]);
    gw = await startGatewayProcess({
      dataDir,
      upstream: upstream.url,
      config: {
        models: [{ id: "m", provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-h2", model: "gpt-test" }],
      },
    });
    session = connect(gw.url);
  });
  after(async () => {
    session.close();
    await killAllGateways();
    await Promise.all([openai.close(), upstream.close()]);
    await rm(dataDir, { recursive: true, force: true });
  });

  it("answers the health route", async () => {
    const stream = h2Request(session, { ":path": "/__byok/health" });
    const [status, body] = await Promise.all([
      new Promise<number>((resolve) => stream.once("response", (h) => resolve(Number(h[":status"])))),
      (async () => {
        let text = "";
        for await (const chunk of stream) text += chunk;
        return text;
      })(),
    ]);
    expect(status).to.equal(200);
    expect(JSON.parse(body)).to.include({ status: "ok" });
  });

  it("relays other paths to the upstream over HTTP/2 with status, headers and body", async () => {
    upstream.enqueue({ status: 201, headers: { "x-up": "1" }, body: "created" });
    const stream = h2Request(
      session,
      { ":method": "POST", ":path": "/aiserver.v1.Other/Call?q=2", "x-client": "cursor" },
      Buffer.from("payload"),
    );
    const headers = await new Promise<Record<string, unknown>>((resolve) => stream.once("response", resolve));
    let body = "";
    for await (const chunk of stream) body += chunk;
    expect(headers[":status"]).to.equal(201);
    expect(headers["x-up"]).to.equal("1");
    expect(body).to.equal("created");
    const [seen] = await upstream.waitForRequests(1);
    expect(seen!.httpVersion).to.equal("2.0");
    expect(seen!.method).to.equal("POST");
    expect(seen!.url).to.equal("/aiserver.v1.Other/Call?q=2");
    expect(seen!.headers["x-client"]).to.equal("cursor");
    expect(seen!.body.toString()).to.equal("payload");
  });

  it("runs a whole turn: RunSSE stream and BidiAppend unary calls share one HTTP/2 session", async () => {
    openai.enqueue({ text: "over h2", usage: { prompt_tokens: 3, completion_tokens: 2 } });
    const requestId = randomUUID();
    const bidi = createClient(BidiService, createConnectTransport({ baseUrl: gw.url, httpVersion: "2" }));
    let seqno = 0n;
    const append = (message: Parameters<typeof create<typeof AgentClientMessageSchema>>[1]) =>
      bidi.bidiAppend({
        requestId: { requestId },
        appendSeqno: ++seqno,
        data: Buffer.from(toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, message))).toString(
          "hex",
        ),
      });

    const sse = h2Request(
      session,
      {
        ":method": "POST",
        ":path": "/agent.v1.AgentService/RunSSE",
        "content-type": "application/connect+proto",
        "connect-protocol-version": "1",
      },
      encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId }))),
    );
    await append({
      message: {
        case: "runRequest",
        value: {
          conversationId: `h2-${requestId}`,
          requestedModel: { modelId: "m" },
          action: { action: { case: "userMessageAction", value: { userMessage: { text: "hi", messageId: "m1" } } } },
        },
      },
    });

    const kinds: string[] = [];
    const reader = new EnvelopeReader();
    let end: ReturnType<typeof parseEndStream> | undefined;
    for await (const chunk of sse) {
      for (const env of reader.push(chunk as Buffer)) {
        if (env.flags & EnvelopeFlags.endStream) {
          end = parseEndStream(env.payload);
          continue;
        }
        const message: AgentServerMessage = fromBinary(AgentServerMessageSchema, env.payload);
        const m = message.message;
        if (m.case === "kvServerMessage" && m.value.message.case === "setBlobArgs") {
          kinds.push("kv_set");
          await append({
            message: {
              case: "kvClientMessage",
              value: { id: m.value.id, message: { case: "setBlobResult", value: {} } },
            },
          });
        } else if (m.case === "interactionUpdate") {
          kinds.push(m.value.message.case ?? "empty");
        } else {
          kinds.push(m.case === "conversationCheckpointUpdate" ? "checkpoint" : String(m.case));
        }
      }
    }
    expect(end).to.deep.equal({});
    expect(kinds.filter((k) => k !== "heartbeat")).to.deep.equal([
      "textDelta",
      "tokenDelta",
      "stepCompleted",
      // system prompt, runtime message, UserMessage, assistant step, turn, final assistant root
      ...Array<string>(6).fill("kv_set"),
      "turnEnded",
      "checkpoint",
      "checkpoint",
      "checkpoint",
    ]);
    expect(openai.requests.at(-1)!.headers.authorization).to.equal("Bearer sk-h2");
  });
});
