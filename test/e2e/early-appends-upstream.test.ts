// Wire-level: appends that arrive before their run_request, for a run that then goes upstream, reach the upstream
// after the run_request, in append_seqno order (docs/protocol/cursor-transport.md §6.1), instead of being dropped.
import { create, fromBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AgentClientMessage, AgentClientMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { bidiAppendPath, postBidiAppend } from "../support/connect-wire.js";
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

describe("e2e: early appends of a run that goes upstream are relayed after its run_request", function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gw: GatewayProcess;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "byok-early-up-"));
    upstream = await startFakeUpstream();
    upstream.setDefault({ status: 200, headers: { "content-type": "application/proto" }, body: new Uint8Array() });
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
});
