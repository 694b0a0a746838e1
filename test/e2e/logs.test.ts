// The gateway's log as a user meets it (README.md "Logs"): JSON lines when stderr is not a terminal, pino-pretty's
// readable lines with --log-format pretty (the form a terminal gets), every line of a run carrying its request id,
// conversation id and model, routing decisions saying why, and no credential in either form. Real gateway, fake
// provider and upstream, scripted Cursor client.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeEnvelope, EnvelopeFlags } from "../../transport/connect/envelope.js";
import { bidiAppendPath, runSsePath } from "../support/connect-wire.js";
import { CursorClient } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";

const configuredKey = "sk-configured-log-test-0123456789";
const userKey = "sk-user-own-log-test-9876543210";
const typo = "byok-modle";

interface Runs {
  configured: string;
  ownKey: string;
  upstream: string;
}

/** One run of each route: a configured model, the user's own key, and a model id nobody configured. */
async function driveRuns(gw: GatewayProcess, provider: FakeOpenAI): Promise<Runs> {
  provider.enqueue({ text: "configured answer" }, { text: "own key answer" });
  const client = new CursorClient(gw.url);
  const started = {
    configured: client.startRun({ conversationId: randomUUID(), modelId: "byok-model" }),
    ownKey: client.startRun({
      conversationId: randomUUID(),
      modelId: "gpt-x",
      credentials: { apiKey: userKey, baseUrl: provider.baseUrl },
    }),
    upstream: client.startRun({ conversationId: randomUUID(), modelId: typo }),
  };
  for (const run of Object.values(started)) expect(await run.done).to.deep.equal({ ok: true });
  // The run's last lines are written after its EndStream leaves; stopping the gateway flushes the rest.
  expect(await gw.stop()).to.deep.equal({ code: 0, signal: null });
  return {
    configured: started.configured.requestId,
    ownKey: started.ownKey.requestId,
    upstream: started.upstream.requestId,
  };
}

describe("e2e: logs", function () {
  this.timeout(30_000);
  let dataDir: string;
  let provider: FakeOpenAI;
  let upstream: FakeUpstream;

  const start = (args: string[]) =>
    startGatewayProcess({
      dataDir,
      upstream: upstream.url,
      args,
      config: {
        models: [
          { id: "byok-model", provider: "openai-chat", baseUrl: provider.baseUrl, apiKey: configuredKey, model: "m" },
        ],
      },
    });

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-logs-"));
    provider = await startFakeOpenAI();
    upstream = await startFakeUpstream();
    upstream.setDefault((req) =>
      req.url === runSsePath
        ? {
            headers: { "content-type": "application/connect+proto" },
            body: encodeEnvelope(EnvelopeFlags.endStream, new TextEncoder().encode("{}")),
          }
        : req.url === bidiAppendPath
          ? { headers: { "content-type": "application/proto" }, body: new Uint8Array() }
          : { status: 404 },
    );
  });
  after(async () => {
    await killAllGateways();
    await provider.close();
    await upstream.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("JSON lines without a terminal: run ids and model on every run line, routing reasons, no credential", async () => {
    const gw = await start([]);
    const runs = await driveRuns(gw, provider);
    const lines = gw.stderrLines().filter((line) => line !== "");
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((r) => r.msg)).to.include.members(["gateway started", "gateway stopped"]);
    // A clean run and a clean stop log no error (a terminal commit cut off by the shutdown once did).
    expect(records.filter((r) => r.level !== "info")).to.deep.equal([]);

    const runLines = records.filter((r) => r.request_id !== undefined);
    for (const r of runLines) expect(r, JSON.stringify(r)).to.include.keys("conversation_id", "model");
    const about = (requestId: string) => runLines.filter((r) => r.request_id === requestId).map((r) => r.msg);
    expect(about(runs.configured)).to.include.members([
      "run started",
      "provider call started",
      "provider call completed",
      "run succeeded",
    ]);
    expect(about(runs.ownKey)).to.include.members(["run started", "run succeeded"]);
    expect(about(runs.upstream)).to.deep.equal(["run relayed to the upstream"]);

    const route = (requestId: string) => runLines.find((r) => r.request_id === requestId && r.route)?.route;
    expect(route(runs.configured)).to.equal("configured model");
    expect(route(runs.ownKey)).to.equal("user key");
    expect(route(runs.upstream)).to.equal(`upstream (model "${typo}" is not configured)`);
    expect(runLines.find((r) => r.request_id === runs.upstream)).to.include({ model: typo });

    for (const key of [configuredKey, userKey]) expect(lines.join("\n")).not.to.contain(key);
  });

  it("the readable form (what a terminal gets) carries the same facts, and no credential", async () => {
    const gw = await start(["--log-format", "pretty"]);
    const runs = await driveRuns(gw, provider);
    const lines = gw.stderrLines().filter((line) => line !== "");
    for (const line of lines) expect(line).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \S/);
    const started = lines.find((l) => l.includes("run started") && l.includes(runs.configured));
    expect(started).to.match(/INFO: run started \{"request_id":"[^"]+","conversation_id":"[^"]+","model":"byok-model"/);
    expect(started).to.contain('"route":"configured model"');
    const relayed = lines.find((l) => l.includes(runs.upstream));
    expect(relayed).to.contain(`INFO: run relayed to the upstream {"request_id":"${runs.upstream}"`);
    expect(relayed).to.contain(`"route":"upstream (model \\"${typo}\\" is not configured)"`);
    for (const line of lines.filter((l) => l.includes('"request_id"')))
      expect(line).to.match(/"conversation_id":"[^"]+","model":"[^"]*"/);
    for (const key of [configuredKey, userKey]) expect(lines.join("\n")).not.to.contain(key);
  });
});
