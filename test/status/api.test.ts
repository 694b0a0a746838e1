// The status JSON API (docs/status-api.md) over HTTP against the real gateway process: a scripted Cursor run held in
// its provider call is seen live with its Run machine state, its state changes and ending arrive on the event stream,
// and afterwards the recent runs, usage per model and day with the cache hit share, and the conversation list show
// it. The configuration never shows a secret, and the pages answer only this machine's own requests.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type FakeUpstream, startFakeUpstream } from "../support/fake-upstream.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { sleep, waitUntil } from "../support/util.js";
import { httpCall } from "../e2e/raw-http.js";
import { API_KEY, MODEL_ID, PROVIDER_MODEL, gate, readSse } from "./status-kit.js";

const TOKEN = "status-token-0123456789abcdef";
const WORKER_SECRET = "worker-env-secret-5b1d8e";

describe("status API: /__byok/api/ on the real gateway", function () {
  this.timeout(20_000);
  const dirs: string[] = [];
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;

  const get = (path: string, headers: Record<string, string> = {}) =>
    httpCall(new URL(path, gw.url).href, { method: "GET", headers });
  const getJson = async (path: string) => {
    const res = await get(path);
    expect(res.status, `${path}: ${res.body}`).to.equal(200);
    return JSON.parse(res.body.toString());
  };

  async function start(config: object): Promise<GatewayProcess> {
    const dataDir = await mkdtemp(join(tmpdir(), "byok-status-api-"));
    dirs.push(dataDir);
    return startGatewayProcess({ dataDir, upstream: upstream.url, config });
  }

  before(async () => {
    openai = await startFakeOpenAI();
    upstream = await startFakeUpstream();
    upstream.setDefault({ status: 200, body: "upstream" });
    gw = await start({
      models: [
        { id: MODEL_ID, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: API_KEY, model: PROVIDER_MODEL },
      ],
    });
  });

  after(async () => {
    await killAllGateways();
    await openai.close();
    await upstream.close();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("shows a live run in its machine state, streams its changes and ending, then records it", async () => {
    const events = await readSse(new URL("/__byok/api/events", gw.url).href);
    const release = gate();
    openai.enqueue({
      text: "Held answer.",
      holdUntil: release.promise,
      usage: { prompt_tokens: 200, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 150 } },
    });
    const conversationId = randomUUID();
    const client = new CursorClient(gw.url);
    const run = client.startRun({ conversationId, modelId: MODEL_ID, text: "hold on" });
    await openai.waitForRequests(1);
    await waitUntil(
      () => events.events.some((e) => e.event === "run.state" && e.data.state.join(".") === "live.calling.streaming"),
      5_000,
      () => `no streaming state among ${JSON.stringify(events.events)}`,
    );
    const live = await getJson("/__byok/api/runs/live");
    expect(live.runs).to.have.length(1);
    expect(live.runs[0]).to.include({
      requestId: run.requestId,
      conversationId,
      model: MODEL_ID,
      endpoint: "openai-chat",
    });
    expect(live.runs[0].state).to.deep.equal(["live", "calling", "streaming"]);
    expect(live.runs[0].startedAt).to.be.a("number");

    release.open();
    expect(await run.done).to.deep.equal({ ok: true });
    await waitUntil(
      () => events.events.some((e) => e.event === "run.ended"),
      5_000,
      () => "no run.ended",
    );
    events.close();
    const kinds = events.events.map((e) => e.event);
    expect(kinds[0]).to.equal("snapshot");
    expect(kinds.filter((k) => k === "run.started")).to.have.length(1);
    expect(kinds.indexOf("run.started")).to.be.lessThan(kinds.indexOf("run.ended"));
    const ended = events.events.find((e) => e.event === "run.ended")!.data.run;
    expect(ended).to.include({ requestId: run.requestId, model: MODEL_ID });
    expect(ended.ending).to.deep.equal({ kind: "succeeded" });
    expect(ended.state).to.deep.equal(["succeeded"]);
    expect(ended.usage).to.deep.equal({ input: 200, output: 7, cacheRead: 150 });

    expect((await getJson("/__byok/api/runs/live")).runs).to.deep.equal([]);
    const recent = (await getJson("/__byok/api/runs/recent")).runs;
    expect(recent[0]).to.deep.equal(ended);

    const usage = await getJson("/__byok/api/usage?days=1");
    expect(usage.since).to.equal(new Date().toISOString().slice(0, 10));
    expect(usage.rows).to.deep.equal([
      {
        frontDoor: "cursor",
        model: PROVIDER_MODEL,
        day: usage.since,
        calls: 1,
        input: 200,
        output: 7,
        cacheRead: 150,
        cacheWrite: 0,
        cacheHitShare: 0.75,
      },
    ]);

    const conversations = await getJson("/__byok/api/conversations?limit=10");
    expect(conversations).to.include({ total: 1, limit: 10, offset: 0 });
    expect(conversations.items[0]).to.include({ conversationId, runs: 1, turns: 1, lastModel: PROVIDER_MODEL });
  });

  it("lists a failed run with its cause, code and message, the provider's key redacted", async () => {
    openai.enqueue({ status: 500, body: `{"error":{"message":"upstream broke; key ${API_KEY} rejected"}}` });
    const client = new CursorClient(gw.url);
    const run = client.startRun({ conversationId: randomUUID(), modelId: MODEL_ID, text: "fail please" });
    expect((await run.done).ok).to.equal(false);
    const [latest] = (await getJson("/__byok/api/runs/recent")).runs;
    expect(latest.requestId).to.equal(run.requestId);
    expect(latest.ending).to.include({ kind: "failed", cause: "provider", code: "unavailable" });
    expect(latest.ending.message).to.include("500");
    expect(JSON.stringify(latest)).not.to.include(API_KEY);
  });

  it("keeps at most 32 event streams open: the next one gets 503 until one closes", async () => {
    const url = new URL("/__byok/api/events", gw.url).href;
    const open = await Promise.all(Array.from({ length: 32 }, () => readSse(url)));
    try {
      const refused = await get("/__byok/api/events");
      expect(refused.status).to.equal(503);
      expect(JSON.parse(refused.body.toString()).code).to.equal("unavailable");
      open.pop()!.close();
      await sleep(200); // the server sees the close
      const again = await readSse(url);
      again.close();
    } finally {
      for (const stream of open) stream.close();
    }
  });

  it("answers bad paging and period arguments with 400 invalid_argument", async () => {
    for (const path of [
      "/__byok/api/conversations?limit=0",
      "/__byok/api/conversations?limit=101",
      "/__byok/api/usage?days=x",
    ]) {
      const res = await get(path);
      expect(res.status, path).to.equal(400);
      expect(JSON.parse(res.body.toString()).code).to.equal("invalid_argument");
    }
  });

  it("redirects /__byok to /__byok/ instead of relaying it, and serves the page with a strict CSP", async () => {
    const before = upstream.requests.length;
    const bare = await get("/__byok");
    expect(bare.status).to.equal(308);
    expect(bare.headers.location).to.equal("/__byok/");
    const page = await get("/__byok/");
    expect(page.status).to.equal(200);
    expect(page.headers["content-type"]).to.match(/^text\/html/);
    expect(page.headers["content-security-policy"]).to.include("default-src 'none'");
    const script = await get("/__byok/assets/app.js");
    expect(script.status).to.equal(200);
    expect(script.body.toString()).to.include("run_live_calling_streaming"); // the diagram is bundled in
    expect(script.body.toString()).not.to.match(/https?:\/\/(?!www\.w3\.org)/); // nothing is loaded from elsewhere
    expect(upstream.requests.length).to.equal(before);
  });

  it("refuses a cross-origin or non-loopback request to the page and the API", async () => {
    const { port } = new URL(gw.url);
    for (const path of ["/__byok/", "/__byok/api/runs/live", "/__byok/api/config", "/__byok/api/events"]) {
      const crossOrigin = await get(path, { origin: "http://evil.example" });
      expect(crossOrigin.status, path).to.equal(403);
      const rebinding = await get(path, { host: `evil.example:${port}` });
      expect(rebinding.status, path).to.equal(403);
      expect(JSON.parse(rebinding.body.toString()).code).to.equal("permission_denied");
    }
  });

  describe("with a gateway token", () => {
    let guarded: GatewayProcess;
    const at = (path: string, headers: Record<string, string> = {}) =>
      httpCall(new URL(path, guarded.url).href, { method: "GET", headers });

    before(async () => {
      guarded = await start({
        models: [{ id: MODEL_ID, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: API_KEY, model: "m" }],
        security: { token: TOKEN },
        aep: { port: 0 },
        workers: { "claude-code": { env: { ANTHROPIC_API_KEY: WORKER_SECRET, SOME_SETTING: "plain" } } },
      });
    });

    it("wants the token: the x-byok-token header, or the cookie that ?token= sets once", async () => {
      expect((await at("/__byok/")).status).to.equal(401);
      expect((await at("/__byok/api/runs/live")).status).to.equal(401);
      expect((await at("/__byok/?token=wrong-token-0123456789")).status).to.equal(401);
      expect((await at("/__byok/api/runs/live", { "x-byok-token": TOKEN })).status).to.equal(200);

      const opened = await at(`/__byok/?token=${TOKEN}`);
      expect(opened.status).to.equal(303);
      expect(opened.headers.location).to.equal("/__byok/");
      const [cookie] = opened.headers["set-cookie"] ?? [];
      expect(cookie).to.match(/^byok_token=/);
      expect(cookie).to.match(/; path=\/__byok/i);
      expect(cookie).to.match(/; samesite=strict/i);
      expect(cookie).to.match(/; httponly/i);
      const sent = { cookie: cookie!.split(";")[0]! };
      expect((await at("/__byok/", sent)).status).to.equal(200);
      expect((await at("/__byok/api/usage", sent)).status).to.equal(200);
      // The query works on the page's own address only, the cookie under /__byok/ only.
      expect((await at(`/__byok/api/runs/live?token=${TOKEN}`)).status).to.equal(401);
      expect((await at("/aiserver.v1.AiService/GetModels", sent)).status).to.equal(401);
    });

    it("shows the configuration with every secret masked, not even a prefix", async () => {
      const res = await at("/__byok/api/config", { "x-byok-token": TOKEN });
      const text = res.body.toString();
      for (const secret of [API_KEY, TOKEN, WORKER_SECRET]) {
        expect(text).not.to.include(secret.slice(0, 10));
      }
      const { config } = JSON.parse(text);
      expect(config.models[0]).to.include({ id: MODEL_ID, apiKey: "••••••••", model: "m" });
      expect(config.security.token).to.equal("••••••••");
      expect(config.workers["claude-code"].env).to.deep.equal({
        ANTHROPIC_API_KEY: "••••••••",
        SOME_SETTING: "••••••••",
      });
      expect(config.gateway).to.include({ host: "127.0.0.1" });
    });

    it("lists AEP sessions when the AEP listener is on", async () => {
      const res = await at("/__byok/api/aep/sessions", { "x-byok-token": TOKEN });
      expect(JSON.parse(res.body.toString())).to.deep.equal({ enabled: true, sessions: [] });
      expect(await getJson("/__byok/api/aep/sessions")).to.deep.equal({ enabled: false, sessions: [] });
    });
  });
});
