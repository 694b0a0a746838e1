// Request bodies share one memory budget (docs/protocol/cursor-transport.md §2.5): 50 concurrent large BidiAppend
// bodies keep the gateway's peak RSS under its baseline plus the configured budget, and a body that does not fit is
// refused with resource_exhausted before it is read. CI size: 8 MiB bodies, a 120 MiB budget. BYOK_LIMITS_FULL=1
// runs the docs/performance.md figure: 60 MiB bodies against the default budget (512 MiB), and prints it.
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentClientMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { bidiAppendPath } from "../support/connect-wire.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";

const FULL = process.env.BYOK_LIMITS_FULL === "1";
const MIB = 2 ** 20;
const BODY_BYTES = (FULL ? 60 : 8) * MIB;
const BODIES = 50;
/** Unset in the full run: the default budget is what is measured there. */
const LIMITS = FULL ? undefined : { maxRequestBytes: 8 * MIB + 1024, bodyBudgetBytes: 120 * MIB };
const BUDGET = LIMITS?.bodyBudgetBytes ?? 512 * MIB;
const FIRST_PART = 64 * 1024;

/** A well-formed append whose stdout data fills the body: decoded whole, then refused (it names no request_id). */
function largeAppend(): Buffer {
  const data = "x".repeat(BODY_BYTES / 2 - 64);
  const message = create(AgentClientMessageSchema, {
    message: {
      case: "execClientMessage",
      value: { id: 1, message: { case: "shellStream", value: { event: { case: "stdout", value: { data } } } } },
    },
  });
  const append = create(BidiAppendRequestSchema, {
    appendSeqno: 1n,
    data: Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex"),
  });
  return Buffer.from(toBinary(BidiAppendRequestSchema, append));
}

interface Outcome {
  status: number;
  code: string;
  /** The answer came while most of the body was still unsent. */
  early: boolean;
}

/** Sends the first part, then the rest unless an answer came first: a refused body is never sent whole. */
function post(url: string, body: Buffer): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request(new URL(bidiAppendPath, url), {
      method: "POST",
      agent: false,
      headers: { "content-type": "application/proto", "content-length": body.length },
    });
    req.on("response", (res) => {
      answered = true;
      const early = sent < body.length;
      const parts: Buffer[] = [];
      res.on("data", (p: Buffer) => parts.push(p));
      res.on("end", () => {
        const code = (JSON.parse(Buffer.concat(parts).toString() || "{}") as { code?: string }).code ?? "";
        resolve({ status: res.statusCode ?? 0, code, early });
        req.destroy();
      });
    });
    req.on("error", (e) => (answered ? undefined : reject(e)));
    const writeRest = () => {
      while (!answered && sent < body.length) {
        const part = body.subarray(sent, sent + MIB);
        sent += part.length;
        if (!req.write(part)) return void req.once("drain", writeRest);
      }
      if (!answered) req.end();
    };
    sent = FIRST_PART;
    req.write(body.subarray(0, FIRST_PART));
    // A refusal comes within milliseconds; an admitted body is answered only once it was read whole.
    setTimeout(writeRest, 1_500);
  });
}

function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)![1]) / 1024;
  return { rss: field("VmRSS"), peak: field("VmHWM") };
}

describe("e2e: request bodies share a memory budget", function () {
  this.timeout(FULL ? 300_000 : 60_000);
  let dataDir: string;
  let gw: GatewayProcess;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-limits-bodies-"));
    gw = await startGatewayProcess({ dataDir, config: LIMITS ? { limits: LIMITS } : {}, readyTimeoutMs: 60_000 });
  });

  after(async () => {
    await killAllGateways();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`keeps ${BODIES} concurrent ${BODY_BYTES / MIB} MiB BidiAppends under baseline + budget`, async () => {
    const body = largeAppend();
    await new Promise((r) => setTimeout(r, 300)); // let start-up settle before the baseline
    const before = memoryMiB(gw.pid);
    const outcomes = await Promise.all(Array.from({ length: BODIES }, () => post(gw.url, body)));
    const after = memoryMiB(gw.pid);

    const decoded = outcomes.filter((o) => o.code === "invalid_argument");
    const refused = outcomes.filter((o) => o.code === "resource_exhausted");
    expect(decoded.length + refused.length, JSON.stringify(outcomes)).to.equal(BODIES);
    expect(decoded.length).to.be.at.least(1);
    expect(refused.length).to.be.at.least(1);
    expect(refused.every((o) => o.status === 429 && o.early)).to.equal(true);
    const grew = after.peak - before.rss;
    const figure =
      `${BODIES} × ${BODY_BYTES / MIB} MiB BidiAppend, budget ${BUDGET / MIB} MiB: ${decoded.length} decoded, ` +
      `${refused.length} refused at once; RSS ${before.rss.toFixed(0)} MiB before, peak ${after.peak.toFixed(0)} MiB ` +
      `(+${grew.toFixed(0)} MiB), ${after.rss.toFixed(0)} MiB after`;
    if (FULL) console.log(figure);
    expect(grew, figure).to.be.below(BUDGET / MIB);
    // Still serving: the budget is given back once the bodies are done.
    const again = await post(gw.url, body);
    expect(again.code).to.equal("invalid_argument");
  });

  it("refuses to start when the budget cannot hold one body of the per-request cap (exit 2)", async () => {
    const failure = await startGatewayProcess({
      dataDir,
      config: { limits: { maxRequestBytes: MIB, bodyBudgetBytes: 2 * MIB } },
    }).then(
      () => "started",
      (e: Error) => e.message,
    );
    expect(failure).to.match(/exited early with code 2/);
    expect(failure).to.contain("limits.bodyBudgetBytes (2097152) must hold one request of limits.maxRequestBytes");
  });
});
