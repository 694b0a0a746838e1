// Wire-level: what a `Run` stream holds is charged to the body budget BidiAppend bodies share
// (docs/protocol/cursor-transport.md §1.2, §2.5). With a 1 MiB frame cap and the smallest budget that allows it
// (7 MiB, charged at 7× like a body being decoded), one stream holding 700 KiB before its run_request fits, a second
// one does not: it ends with resource_exhausted in its end-stream frame, and once the first call is gone the gateway
// serves a whole turn over Run again.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { type ClientHttp2Session, type ClientHttp2Stream, connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ParsedEndStream, parseEndStream } from "../../transport/connect/end-stream.js";
import { EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { driveRun, RUN_PATH, runClient, runRequest } from "../support/run-client.js";

const KIB = 1024;
const MIB = 1024 * KIB;

/** The start of one envelope announcing a 900 KiB message, then `bytes` of it: a frame still being read. */
function partialFrame(bytes: number): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(900 * KIB, 1);
  return Buffer.concat([header, Buffer.alloc(bytes, 0x0a)]);
}

function openRun(session: ClientHttp2Session): ClientHttp2Stream {
  return session.request({
    ":method": "POST",
    ":path": RUN_PATH,
    "content-type": "application/connect+proto",
    "connect-protocol-version": "1",
  });
}

async function endStreamOf(stream: ClientHttp2Stream): Promise<ParsedEndStream> {
  const reader = new EnvelopeReader({ maxPayloadBytes: MIB });
  for await (const chunk of stream)
    for (const env of reader.push(chunk as Buffer))
      if (env.flags & EnvelopeFlags.endStream) return parseEndStream(env.payload);
  throw new Error("no end-stream frame");
}

describe("e2e: Run frames are charged to the body budget", function () {
  this.timeout(30_000);
  let openai: FakeOpenAI;
  let gw: GatewayProcess;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "byok-run-budget-"));
    openai = await startFakeOpenAI();
    gw = await startGatewayProcess({
      dataDir: dir,
      upstream: "http://127.0.0.1:9",
      config: {
        models: [{ id: "m", provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-budget", model: "m" }],
        limits: { maxRequestBytes: MIB, bodyBudgetBytes: 7 * MIB },
      },
    });
  });
  after(async () => {
    await killAllGateways();
    await openai.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a second stream that does not fit ends resource_exhausted; the gateway then serves a whole turn", async () => {
    const session = connect(gw.url);
    try {
      const first = openRun(session);
      first.on("data", () => {});
      // Written in full only once the gateway has read nearly all of it (HTTP/2 flow control).
      await new Promise<void>((resolve) => first.write(partialFrame(700 * KIB), () => resolve()));
      await new Promise((r) => setTimeout(r, 200));

      const second = openRun(session);
      second.write(partialFrame(700 * KIB));
      const end = await endStreamOf(second);
      expect(end.error?.code).to.equal("resource_exhausted");
      expect(end.error?.message).to.match(/memory budget of 7340032 bytes/);

      first.close();
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      session.close();
    }
    openai.enqueue({ text: "still serving" });
    const result = await driveRun(runClient(gw.url), [runRequest("m", "hi")]);
    expect(result.error).to.equal(undefined);
    expect(result.kinds).to.include("turnEnded");
  });

  it("run_requests near the frame cap fit the smallest budget, turn after turn (each charge is given back)", async () => {
    for (let i = 0; i < 3; i++) {
      openai.enqueue({ text: `turn ${i}` });
      const result = await driveRun(runClient(gw.url), [runRequest("m", "x".repeat(900 * KIB))]);
      expect(result.error, `turn ${i}`).to.equal(undefined);
    }
  });
});
