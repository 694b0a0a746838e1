// Wire-level: what a request holds when its run_request sends it upstream follows it there. Appends that arrived
// before the run_request reach the upstream after it, in append_seqno order (docs/protocol/cursor-transport.md §6.1),
// instead of being dropped; a RunSSE opened over HTTP/2 before it follows the upstream's RunSSE over HTTP/2 (§8.3).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "node:http2";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  AgentServerMessageSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema, BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { bidiAppendPath, postBidiAppend, runSsePath } from "../support/connect-wire.js";
import { type FakeUpstream, startFakeUpstream } from "../support/fake-upstream.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { runRequest } from "../support/run-client.js";

const message = (init: Parameters<typeof create<typeof AgentClientMessageSchema>>[1]) =>
  create(AgentClientMessageSchema, init);
const cancel = (reason: string) =>
  message({
    message: { case: "conversationAction", value: { action: { case: "cancelAction", value: { reason } } } },
  });

/** What the upstream got for one request_id: each append's seqno and message kind (with a cancel's reason). */
function appendsFor(upstream: FakeUpstream, requestId: string): Array<[number, string]> {
  return upstream.requests
    .filter((r) => r.url === bidiAppendPath)
    .map((r) => fromBinary(BidiAppendRequestSchema, r.body))
    .filter((a) => a.requestId?.requestId === requestId)
    .map((a) => {
      const m: AgentClientMessage = fromBinary(AgentClientMessageSchema, Buffer.from(a.data, "hex"));
      const action = m.message.case === "conversationAction" ? m.message.value.action : undefined;
      const kind = action?.case === "cancelAction" ? `cancel:${action.value.reason}` : String(m.message.case);
      return [Number(a.appendSeqno), kind];
    });
}

/** The upstream's RunSSE body: one text delta, then a success end-stream. */
function upstreamStream(text: string): Buffer {
  const delta = create(AgentServerMessageSchema, {
    message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text } } } },
  });
  return Buffer.concat([
    encodeEnvelope(0, toBinary(AgentServerMessageSchema, delta)),
    encodeEnvelope(EnvelopeFlags.endStream, Buffer.from("{}")),
  ]);
}

describe("e2e: a request handed to the upstream takes what it holds along", function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gw: GatewayProcess;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "byok-early-up-"));
    upstream = await startFakeUpstream();
    upstream.setDefault((req) =>
      req.url === runSsePath
        ? { status: 200, headers: { "content-type": "text/event-stream" }, body: upstreamStream("from upstream") }
        : { status: 200, headers: { "content-type": "application/proto" }, body: new Uint8Array() },
    );
    gw = await startGatewayProcess({ dataDir: dir, upstream: upstream.url, config: { models: [] } });
  });
  after(async () => {
    await killAllGateways();
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("appends 3 and 2 wait; the run_request (1) goes upstream, then 2 and 3 follow it in order", async () => {
    const requestId = randomUUID();
    expect(await postBidiAppend(gw.url, { requestId, seqno: 3n, message: cancel("third") })).to.deep.equal({
      status: 200,
    });
    expect(await postBidiAppend(gw.url, { requestId, seqno: 2n, message: cancel("second") })).to.deep.equal({
      status: 200,
    });
    expect(appendsFor(upstream, requestId), "nothing relayed before the route is known").to.deep.equal([]);
    const routed = await postBidiAppend(gw.url, {
      requestId,
      seqno: 1n,
      message: message(runRequest("cursor-own")),
    });
    expect(routed).to.deep.equal({ status: 200 });
    await upstream.waitForRequests(3);
    expect(appendsFor(upstream, requestId)).to.deep.equal([
      [1, "runRequest"],
      [2, "cancel:second"],
      [3, "cancel:third"],
    ]);

    // Later appends go straight through, and the early ones are not sent twice.
    await postBidiAppend(gw.url, { requestId, seqno: 4n, message: cancel("fourth") });
    expect(appendsFor(upstream, requestId).map(([seqno]) => seqno)).to.deep.equal([1, 2, 3, 4]);
  });

  it("a RunSSE opened over HTTP/2 before the run_request follows the upstream's RunSSE over HTTP/2", async () => {
    const requestId = randomUUID();
    const session = connect(gw.url);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": runSsePath,
        "content-type": "application/connect+proto",
        "connect-protocol-version": "1",
      });
      stream.end(encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId }))));
      await new Promise((resolve) => stream.once("response", resolve));
      const routed = await postBidiAppend(gw.url, { requestId, seqno: 1n, message: message(runRequest("cursor-own")) });
      expect(routed).to.deep.equal({ status: 200 });
      const reader = new EnvelopeReader();
      const texts: string[] = [];
      let end = "";
      for await (const chunk of stream)
        for (const env of reader.push(chunk as Buffer)) {
          if (env.flags & EnvelopeFlags.endStream) end = Buffer.from(env.payload).toString();
          else {
            const m = fromBinary(AgentServerMessageSchema, env.payload).message;
            if (m.case === "interactionUpdate" && m.value.message.case === "textDelta")
              texts.push(m.value.message.value.text);
          }
        }
      expect(texts).to.deep.equal(["from upstream"]);
      expect(end).to.equal("{}");
    } finally {
      session.close();
    }
    const runSse = upstream.requests.filter((r) => r.url === runSsePath);
    expect(runSse.map((r) => r.httpVersion)).to.deep.equal(["2.0"]);
  });
});
