// Runs for models this gateway does not serve go to the upstream whole (README.md "Configuration"): every
// BidiAppend of the request is relayed byte for byte and the client's RunSSE carries the upstream's own stream,
// whether RunSSE was opened before the run_request (the usual order) or after it. Real gateway, fake upstream.
import { expect } from "chai";
import { create, toBinary } from "@bufbuild/protobuf";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import {
  AgentClientMessageSchema,
  AgentServerMessageSchema,
  type AgentClientMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema, BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { encodeEnvelope, EnvelopeFlags } from "../../transport/connect/envelope.js";
import { bidiAppendPath, openRunSse, postBidiAppend, runSsePath, type RunSseEvents } from "../support/connect-wire.js";
import {
  startFakeUpstream,
  type FakeUpstream,
  type UpstreamRequest,
  type UpstreamResponse,
} from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { httpCall } from "./raw-http.js";
import { CursorClient } from "../support/cursor-client.js";
import { textDeltas, type RunEnd } from "../support/observed-frames.js";

const upstreamText = "answered by Cursor's own backend";

function runRequest(modelId: string, conversationId = randomUUID()): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: {
      case: "runRequest",
      value: {
        conversationId,
        requestedModel: { modelId },
        action: {
          action: { case: "userMessageAction", value: { userMessage: { text: "hello", messageId: randomUUID() } } },
        },
      },
    },
  });
}

function cancel(): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: { case: "conversationAction", value: { action: { case: "cancelAction", value: { reason: "user" } } } },
  });
}

/** The upstream's RunSSE body: one text delta, then a success end-stream. */
function upstreamStream(): Uint8Array {
  const text = create(AgentServerMessageSchema, {
    message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text: upstreamText } } } },
  });
  return Buffer.concat([
    encodeEnvelope(0, toBinary(AgentServerMessageSchema, text)),
    encodeEnvelope(EnvelopeFlags.endStream, new TextEncoder().encode("{}")),
  ]);
}

function byPath(runSse: UpstreamResponse): (req: UpstreamRequest) => UpstreamResponse {
  return (req) =>
    req.url === runSsePath
      ? runSse
      : req.url === bidiAppendPath
        ? { status: 200, headers: { "content-type": "application/proto" }, body: new Uint8Array() }
        : { status: 599, body: `unexpected ${req.url}` };
}

interface Observed {
  texts: string[];
  end: Promise<RunEnd>;
}

function subscribe(baseUrl: string, requestId: string): Observed & { headers: Promise<void> } {
  const texts: string[] = [];
  let report!: (end: RunEnd) => void;
  const end = new Promise<RunEnd>((resolve) => (report = resolve));
  const on: RunSseEvents = {
    message: (m) => {
      if (m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta")
        texts.push(m.message.value.message.value.text);
    },
    end: report,
    broken: report,
    violation: (detail) => texts.push(`violation: ${detail}`),
  };
  const { headers } = openRunSse(baseUrl, requestId, { acceptGzip: true }, on);
  return { texts, end, headers };
}

describe("e2e: runs for models not served here go to the upstream", function () {
  this.timeout(15_000);
  let dataDir: string;
  let upstream: FakeUpstream;
  let provider: FakeOpenAI;
  let gw: GatewayProcess;

  before(async function () {
    this.timeout(30_000);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-run-relay-"));
    upstream = await startFakeUpstream();
    provider = await startFakeOpenAI();
    gw = await startGatewayProcess({
      dataDir,
      upstream: upstream.url,
      config: {
        models: [
          {
            id: "byok-model",
            provider: "openai-chat",
            baseUrl: provider.baseUrl,
            apiKey: "sk-test",
            model: "gpt-test",
          },
        ],
      },
    });
  });
  after(async () => {
    await killAllGateways();
    await upstream.close();
    await provider.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  beforeEach(() =>
    upstream.setDefault(
      byPath({ status: 200, headers: { "content-type": "text/event-stream" }, body: upstreamStream() }),
    ),
  );

  it("RunSSE first: the open stream follows the upstream's, and every append is relayed byte for byte", async () => {
    const requestId = randomUUID();
    const seen = upstream.requests.length;
    const observed = subscribe(gw.url, requestId);
    await observed.headers;
    const first = runRequest("cursor-own-model");
    expect(await postBidiAppend(gw.url, { requestId, seqno: 0n, message: first })).to.deep.equal({ status: 200 });
    expect(await observed.end).to.deep.equal({ ok: true });
    expect(observed.texts).to.deep.equal([upstreamText]);

    expect(await postBidiAppend(gw.url, { requestId, seqno: 1n, message: cancel() })).to.deep.equal({ status: 200 });
    const relayed = upstream.requests.slice(seen);
    const appends = relayed.filter((r) => r.url === bidiAppendPath);
    expect(appends).to.have.length(2);
    expect(relayed.filter((r) => r.url === runSsePath)).to.have.length(1);
    expect(provider.requests).to.have.length(0);
    // The upstream sees the client's own request: same body bytes, same Connect headers.
    expect(appends[0]!.headers["connect-protocol-version"]).to.equal("1");
    const sent = create(BidiAppendRequestSchema, {
      data: Buffer.from(toBinary(AgentClientMessageSchema, first)).toString("hex"),
      requestId: { requestId },
      appendSeqno: 0n,
    });
    expect(appends[0]!.body.equals(toBinary(BidiAppendRequestSchema, sent))).to.equal(true);
  });

  it("RunSSE after the run_request (or a reconnect) is relayed whole, headers included", async () => {
    const requestId = randomUUID();
    upstream.setDefault(
      byPath({
        status: 200,
        headers: { "content-type": "text/event-stream", "x-upstream": "yes" },
        body: upstreamStream(),
      }),
    );
    expect(
      await postBidiAppend(gw.url, { requestId, seqno: 0n, message: runRequest("cursor-own-model") }),
    ).to.deep.equal({ status: 200 });
    const res = await httpCall(new URL(runSsePath, gw.url).href, {
      method: "POST",
      headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
      body: [encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })))],
    });
    expect(res.status).to.equal(200);
    expect(res.headers["x-upstream"]).to.equal("yes");
    expect(res.body.equals(upstreamStream())).to.equal(true);
    const runSse = upstream.requests.filter((r) => r.url === runSsePath).at(-1)!;
    expect(runSse.body.subarray(5).toString("utf8")).to.contain(requestId);
  });

  it("an upstream that refuses the handed-over RunSSE ends the stream with a Connect error, not silence", async () => {
    upstream.setDefault(byPath({ status: 503, headers: { "content-type": "text/plain" }, body: "maintenance" }));
    const requestId = randomUUID();
    const observed = subscribe(gw.url, requestId);
    await observed.headers;
    await postBidiAppend(gw.url, { requestId, seqno: 0n, message: runRequest("cursor-own-model") });
    const end = await observed.end;
    expect(end).to.include({ ok: false, code: "unavailable" });
    expect(end.ok === false && end.message).to.contain("HTTP 503");
  });

  it("a configured model and a request with the user's own key still run here", async () => {
    provider.enqueue({ text: "local answer" }, { text: "local again" });
    const seen = upstream.requests.length;
    const client = new CursorClient(gw.url);
    const runs = [
      client.startRun({ conversationId: randomUUID(), modelId: "byok-model" }),
      client.startRun({
        conversationId: randomUUID(),
        modelId: "gpt-x",
        credentials: { apiKey: "sk-user", baseUrl: provider.baseUrl },
      }),
    ];
    for (const run of runs) expect(await run.done).to.deep.equal({ ok: true });
    expect(runs.flatMap((run) => textDeltas(run.frames)).join(" ")).to.equal("local answer local again");
    expect(
      upstream.requests.slice(seen).filter((r) => r.url === runSsePath || r.url === bidiAppendPath),
    ).to.have.length(0);
    expect(client.violations()).to.deep.equal([]);
  });
});
