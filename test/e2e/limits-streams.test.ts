// Abandoned RunSSE streams are bounded (docs/protocol/cursor-transport.md §6.9): a RunSSE whose request_id never
// gets a run_request ends with deadline_exceeded after the configured wait, its entry is freed after the retention,
// and while the bound of waiting streams is reached a new one is refused at once with resource_exhausted.
// CI size: 200 streams. BYOK_LIMITS_FULL=1 runs the 5,000-stream figure of docs/performance.md (a 60 s wait, so all
// are open before the first expires) and prints it.
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import type { DiagnosticsSnapshot } from "../../transport/diagnostics.js";
import { parseEndStream } from "../../transport/connect/end-stream.js";
import { encodeEnvelope, EnvelopeReader } from "../../transport/connect/envelope.js";
import { runSsePath } from "../support/connect-wire.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { httpCall } from "./raw-http.js";

const FULL = process.env.BYOK_LIMITS_FULL === "1";
const STREAMS = FULL ? 5_000 : 200;
// Long enough for all streams to be open (and counted) before the first one expires, on a loaded machine too.
const WAIT_MS = FULL ? 60_000 : 6_000;
const RETENTION_MS = FULL ? 30_000 : 500;

async function openRunSse(gw: GatewayProcess): Promise<{ code: string | undefined; message: string }> {
  const body = encodeEnvelope(
    0,
    toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: randomUUID() })),
  );
  const res = await httpCall(new URL(runSsePath, gw.url).href, {
    method: "POST",
    headers: { "content-type": "application/connect+proto" },
    body: [body],
  });
  const envelopes = new EnvelopeReader().push(res.body);
  const { error } = parseEndStream(envelopes.at(-1)!.payload);
  return { code: error?.code, message: error?.message ?? "" };
}

async function diagnostics(gw: GatewayProcess): Promise<DiagnosticsSnapshot> {
  const res = await httpCall(`${gw.url}/__byok/diagnostics`, { method: "GET" });
  return JSON.parse(res.body.toString()) as DiagnosticsSnapshot;
}

describe("e2e: abandoned RunSSE streams are closed, bounded and freed", function () {
  this.timeout(FULL ? 240_000 : 30_000);
  let dataDir: string;
  let gw: GatewayProcess;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-limits-streams-"));
    gw = await startGatewayProcess({
      dataDir,
      env: { BYOK_DIAGNOSTICS: "1" },
      readyTimeoutMs: 60_000,
      config: {
        timers: { runRequestWaitMs: WAIT_MS, terminalRetentionMs: RETENTION_MS },
        limits: { maxWaitingStreams: STREAMS },
      },
    });
  });

  after(async () => {
    await killAllGateways();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`closes ${STREAMS} streams that never get a run_request, refuses one more, then frees them all`, async () => {
    const baseline = await diagnostics(gw);
    const started = Date.now();
    const streams = Array.from({ length: STREAMS }, () => openRunSse(gw));
    let peak = baseline;
    await waitUntilAsync(async () => {
      peak = await diagnostics(gw);
      return peak.requestStreams.waiting === STREAMS;
    }, WAIT_MS);
    const openAfterMs = Date.now() - started;
    const refused = await openRunSse(gw);
    expect(refused.code).to.equal("resource_exhausted");

    const ends = await Promise.all(streams);
    const closedAfterMs = Date.now() - started;
    expect(new Set(ends.map((e) => e.code))).to.deep.equal(new Set(["deadline_exceeded"]));
    expect(ends[0]!.message).to.contain("no run_request");
    expect(closedAfterMs).to.be.at.least(WAIT_MS - 100);

    let after = peak;
    await waitUntilAsync(async () => {
      after = await diagnostics(gw);
      return after.requestStreams.streams === 0;
    }, RETENTION_MS + 10_000);
    expect(after.requestStreams.waiting).to.equal(0);
    const mib = (n: number) => (n / 2 ** 20).toFixed(1);
    const figure = `${STREAMS} abandoned RunSSE: RSS ${mib(baseline.rssBytes)} MiB before, ${mib(peak.rssBytes)} MiB while waiting, ${mib(after.rssBytes)} MiB after; all open after ${openAfterMs} ms, closed after ${closedAfterMs} ms`;
    if (FULL) console.log(figure);
  });
});

async function waitUntilAsync(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
