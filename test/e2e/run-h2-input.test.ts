// The `Run` stream and BidiAppend with input that arrives early or wrong (docs/protocol/cursor-transport.md §1.2,
// §5): bad frames each end in a clear Connect error in the end-stream frame while the gateway keeps serving;
// prewarm_request and appends sent before the run_request are held and delivered once the route is known; a
// run_request naming no model continues on its conversation's last route, also after a restart.
import { expect } from "chai";
import { create, toBinary } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { connect } from "node:http2";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  AgentClientMessageSchema,
  AgentServerMessageSchema,
  type AgentClientMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { parseEndStream, type ParsedEndStream } from "../../transport/connect/end-stream.js";
import { encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { bidiAppendPath, postBidiAppend, runSsePath } from "../support/connect-wire.js";
import { CursorClient } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { driveRun, RUN_PATH, runClient, runRequest } from "../support/run-client.js";

const MAX_REQUEST_BYTES = 1024 * 1024;

const message = (init: Parameters<typeof create<typeof AgentClientMessageSchema>>[1]) =>
  create(AgentClientMessageSchema, init);
const frame = (m: AgentClientMessage) => Buffer.from(encodeEnvelope(0, toBinary(AgentClientMessageSchema, m)));
const heartbeat = () => message({ message: { case: "clientHeartbeat", value: {} } });
const prewarm = (modelId: string) =>
  message({
    message: { case: "prewarmRequest", value: { requestedModel: { modelId }, conversationId: randomUUID() } },
  });
const cancel = () =>
  message({
    message: { case: "conversationAction", value: { action: { case: "cancelAction", value: { reason: "early" } } } },
  });

/** A Run call with raw bytes; resolves with the end-stream frame the gateway sent. */
async function rawRun(
  url: string,
  body: Buffer,
  headers: Record<string, string> = {},
  keepOpen = false,
): Promise<ParsedEndStream> {
  const session = connect(url);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": RUN_PATH,
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
      ...headers,
    });
    if (keepOpen) stream.write(body);
    else stream.end(body);
    const reader = new EnvelopeReader({ maxPayloadBytes: 64 * 1024 * 1024 });
    let end: ParsedEndStream | undefined;
    for await (const chunk of stream) {
      for (const env of reader.push(chunk as Buffer))
        if (env.flags & EnvelopeFlags.endStream) end = parseEndStream(env.payload);
    }
    if (!end) throw new Error("no end-stream frame");
    return end;
  } finally {
    session.close();
  }
}

/** The upstream's answer to a relayed Run or RunSSE: one text delta, then success. */
function upstreamAnswer(): Buffer {
  const text = create(AgentServerMessageSchema, {
    message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text: "from Cursor" } } } },
  });
  return Buffer.concat([
    encodeEnvelope(0, toBinary(AgentServerMessageSchema, text)),
    encodeEnvelope(EnvelopeFlags.endStream, Buffer.from("{}")),
  ]);
}

describe("e2e: early and bad input on Run and BidiAppend", () => {
  let dir: string;
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;
  const models = () => [
    { id: "m", provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-in", model: "gpt-test" },
  ];
  const start = () =>
    startGatewayProcess({
      dataDir: dir,
      upstream: upstream.url,
      config: { models: models(), limits: { maxRequestBytes: MAX_REQUEST_BYTES }, timers: { runRequestWaitMs: 2_000 } },
    });

  before(async function () {
    this.timeout(60_000);
    dir = await mkdtemp(join(tmpdir(), "byok-run-input-"));
    [openai, upstream] = await Promise.all([startFakeOpenAI(), startFakeUpstream()]);
    upstream.setDefault((req) =>
      req.url === bidiAppendPath
        ? { status: 200, headers: { "content-type": "application/proto" }, body: new Uint8Array() }
        : { status: 200, headers: { "content-type": "application/connect+proto" }, body: upstreamAnswer() },
    );
    gw = await start();
  });
  after(async () => {
    await killAllGateways();
    await Promise.all([openai.close(), upstream.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  describe("bad Run input: a Connect error in the end-stream frame", () => {
    const runRequestFrame = () => frame(message(runRequest("m")));
    const cases: Array<{
      name: string;
      body: () => Buffer;
      headers?: Record<string, string>;
      code: string;
      message: RegExp;
    }> = [
      {
        name: "a truncated frame",
        body: () => runRequestFrame().subarray(0, 12),
        code: "invalid_argument",
        message: /^protocol error: stream ended inside an envelope \(12 of \d+ bytes\)$/,
      },
      {
        name: "an oversized frame (refused from its header)",
        body: () => Buffer.from([0, 0xff, 0xff, 0xff, 0xf0, 1, 2, 3]),
        code: "resource_exhausted",
        message: /^envelope payload of 4294967280 bytes exceeds the limit of 1048576 bytes$/,
      },
      {
        name: "a gzip bomb",
        body: () => Buffer.from(encodeEnvelope(EnvelopeFlags.compressed, gzipSync(Buffer.alloc(64 * 1024 * 1024)))),
        headers: { "connect-content-encoding": "gzip" },
        code: "resource_exhausted",
        message: /^decompressed envelope exceeds the limit of 1048576 bytes$/,
      },
      {
        name: "a stream that ends before its run_request",
        body: () => frame(heartbeat()),
        code: "invalid_argument",
        message: /^the Run stream ended before its run_request$/,
      },
      {
        name: "two run_requests",
        body: () => Buffer.concat([runRequestFrame(), runRequestFrame()]),
        code: "invalid_argument",
        message: /^protocol error: a second run_request on one Run stream$/,
      },
    ];
    for (const c of cases) {
      it(`ends ${c.name} with ${c.code}`, async () => {
        const end = await rawRun(gw.url, c.body(), c.headers);
        expect(end.error?.code).to.equal(c.code);
        expect(end.error?.message).to.match(c.message);
      });
    }

    it("ends a stream whose run_request does not come in time with deadline_exceeded", async () => {
      const end = await rawRun(gw.url, frame(heartbeat()), {}, true);
      expect(end.error?.code).to.equal("deadline_exceeded");
      expect(end.error?.message).to.equal("no run_request arrived on this Run stream in time");
    });

    it("keeps serving runs after the bad input", async () => {
      openai.enqueue({ text: "still here" });
      const result = await driveRun(runClient(gw.url), [runRequest("m", "hi")]);
      expect(result.error).to.equal(undefined);
      expect(result.kinds).to.include.members(["textDelta", "turnEnded"]);
    });
  });

  it("x-request-id names the Run's request: a RunSSE for it afterwards replays the run and its end", async () => {
    openai.enqueue({ text: "linked" });
    const requestId = randomUUID();
    const result = await driveRun(runClient(gw.url), [runRequest("m", "hi")], {
      call: { headers: { "x-request-id": requestId } },
    });
    expect(result.error).to.equal(undefined);
    // Within the terminal retention the stream is still there; an unknown request_id would wait and time out.
    const end = await rawRunSse(gw.url, requestId);
    expect(end).to.deep.equal({});
  });

  describe("prewarm and early appends", () => {
    it("Run: a prewarm_request before the run_request is accepted and the turn runs", async () => {
      openai.enqueue({ text: "warm" });
      const result = await driveRun(runClient(gw.url), [
        { message: { case: "prewarmRequest", value: { requestedModel: { modelId: "m" } } } },
        runRequest("m", "hi"),
      ]);
      expect(result.error).to.equal(undefined);
      expect(result.kinds).to.include("turnEnded");
    });

    it("Run: a message before the run_request is held and delivered after it (an early cancel cancels the run)", async () => {
      const end = await rawRun(gw.url, Buffer.concat([frame(cancel()), frame(message(runRequest("m")))]));
      expect(end.error?.code).to.equal("canceled");
      expect(end.error?.message).to.equal("early");
    });

    it("BidiAppend: a prewarm_request opens the request; the run_request that follows runs the turn", async () => {
      openai.enqueue({ text: "warm over bidi" });
      const requestId = randomUUID();
      const warm = await postBidiAppend(gw.url, { requestId, seqno: 1n, message: prewarm("m") });
      expect(warm).to.deep.equal({ status: 200 });
      const client = new CursorClient(gw.url);
      const run = client.startRun({
        conversationId: randomUUID(),
        requestId,
        firstSeqno: 2n,
        modelId: "m",
        text: "hi",
      });
      const end = await run.done;
      expect(end).to.deep.equal({ ok: true });
    });

    it("BidiAppend: an append before the run_request is held until it arrives, then delivered in order", async () => {
      const requestId = randomUUID();
      const early = await postBidiAppend(gw.url, { requestId, seqno: 2n, message: cancel() });
      expect(early).to.deep.equal({ status: 200 });
      const first = await postBidiAppend(gw.url, { requestId, seqno: 1n, message: message(runRequest("m")) });
      expect(first).to.deep.equal({ status: 200 });
      const end = await rawRunSse(gw.url, requestId);
      expect(end.error?.code).to.equal("canceled");
    });

    it("BidiAppend: what waits for a run_request is bounded in bytes (16 MiB)", async () => {
      const requestId = randomUUID();
      const big = () =>
        message({
          message: {
            case: "execClientMessage",
            value: {
              id: 1,
              message: {
                case: "shellStream",
                value: { event: { case: "stdout", value: { data: "x".repeat(400 * 1024) } } },
              },
            },
          },
        });
      const answers = [];
      for (let seqno = 2n; seqno <= 42n; seqno++)
        answers.push(await postBidiAppend(gw.url, { requestId, seqno, message: big() }));
      // Each message is a little over 400 KiB: 40 fit in 16 MiB, the 41st does not.
      expect(answers.slice(0, 40).map((a) => a.status)).to.deep.equal(Array<number>(40).fill(200));
      expect(answers[40]!.error?.code).to.equal("resource_exhausted");
      expect(answers[40]!.error?.message).to.match(/sent more than 16777216 bytes before its run_request$/);
    });

    it("BidiAppend: a prewarm_request for a model served upstream is relayed there", async () => {
      const before = upstream.requests.length;
      const res = await postBidiAppend(gw.url, { requestId: randomUUID(), seqno: 1n, message: prewarm("cursor-own") });
      expect(res).to.deep.equal({ status: 200 });
      const seen = upstream.requests.slice(before);
      expect(seen.map((r) => r.url)).to.deep.equal([bidiAppendPath]);
    });
  });

  describe("a run_request that names no model", () => {
    const local = randomUUID();
    const cursors = randomUUID();

    it("continues locally after a BYOK turn and upstream after a Cursor-model turn", async () => {
      openai.enqueue({ text: "first" }, { text: "second" });
      expect((await driveRun(runClient(gw.url), [runRequest("m", "one", local)])).error).to.equal(undefined);
      const served = openai.requests.length;
      expect((await driveRun(runClient(gw.url), [runRequest("", "two", local)])).error).to.equal(undefined);
      expect(openai.requests.length).to.equal(served + 1);

      const relayed = upstream.requests.length;
      await driveRun(runClient(gw.url), [runRequest("cursor-own", "one", cursors)], { halfClose: true });
      await driveRun(runClient(gw.url), [runRequest("", "two", cursors)], { halfClose: true });
      expect(upstream.requests.slice(relayed).map((r) => r.url)).to.deep.equal([RUN_PATH, RUN_PATH]);
    });

    it("keeps both routes across a restart: the store decides", async function () {
      this.timeout(60_000);
      await gw.stop();
      gw = await start();
      openai.enqueue({ text: "third" });
      const served = openai.requests.length;
      const result = await driveRun(runClient(gw.url), [runRequest("", "three", local)]);
      expect(result.error).to.equal(undefined);
      expect(openai.requests.length).to.equal(served + 1);
      const relayed = upstream.requests.length;
      await driveRun(runClient(gw.url), [runRequest("", "three", cursors)], { halfClose: true });
      expect(upstream.requests.slice(relayed).map((r) => r.url)).to.deep.equal([RUN_PATH]);
    });
  });
});

/** A RunSSE for an existing request; resolves with its end-stream frame. */
async function rawRunSse(url: string, requestId: string): Promise<ParsedEndStream> {
  const { BidiRequestIdSchema } = await import("../../proto/gen/aiserver/v1/aiserver_pb.js");
  const session = connect(url);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": runSsePath,
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
    });
    stream.end(encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId }))));
    const reader = new EnvelopeReader();
    let end: ParsedEndStream | undefined;
    for await (const chunk of stream) {
      for (const env of reader.push(chunk as Buffer))
        if (env.flags & EnvelopeFlags.endStream) end = parseEndStream(env.payload);
    }
    if (!end) throw new Error("no end-stream frame");
    return end;
  } finally {
    session.close();
  }
}
