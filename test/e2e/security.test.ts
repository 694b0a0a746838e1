// Only the user's own Cursor can talk to the Connect port (docs/protocol/cursor-transport.md §9): a cross-site POST,
// a rebinding Host, a non-Connect content type and — on a non-loopback address — a missing or wrong token are refused
// before any body is read, on every route, and the provider is never called.
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentClientMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema, BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { parseEndStream } from "../../transport/connect/end-stream.js";
import { encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { bidiAppendPath, runSsePath } from "../support/connect-wire.js";
import { CursorClient } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { httpCall, type RawResponse } from "./raw-http.js";

const MODEL = "byok-security";
const TOKEN = "a-token-of-32-characters-or-so!!";

function runRequestAppend(requestId: string): ReturnType<typeof create<typeof BidiAppendRequestSchema>> {
  const message = create(AgentClientMessageSchema, {
    message: {
      case: "runRequest",
      value: {
        conversationId: randomUUID(),
        requestedModel: { modelId: MODEL },
        action: { action: { case: "userMessageAction", value: { userMessage: { text: "hi", messageId: "m1" } } } },
      },
    },
  });
  return create(BidiAppendRequestSchema, {
    requestId: { requestId },
    appendSeqno: 1n,
    data: Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex"),
  });
}

const runSseBody = (requestId: string) =>
  encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));

function call(gw: GatewayProcess, path: string, headers: Record<string, string>, body?: Uint8Array) {
  return httpCall(new URL(path, gw.url).href, { method: body ? "POST" : "GET", headers, body: body ? [body] : [] });
}

function expectRefused(res: RawResponse, status: number, code: string): void {
  expect(res.status, res.body.toString()).to.equal(status);
  expect(JSON.parse(res.body.toString()).code).to.equal(code);
}

describe("e2e: only the user's own Cursor reaches the Connect port", function () {
  this.timeout(20_000);
  const dirs: string[] = [];
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;

  async function start(extra: { host?: string; security?: object } = {}): Promise<GatewayProcess> {
    const dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-security-"));
    dirs.push(dataDir);
    return startGatewayProcess({
      dataDir,
      upstream: upstream.url,
      ...(extra.host ? { host: extra.host } : {}),
      config: {
        models: [{ id: MODEL, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-sec", model: "gpt" }],
        ...(extra.security ? { security: extra.security } : {}),
      },
    });
  }

  before(async () => {
    openai = await startFakeOpenAI();
    upstream = await startFakeUpstream();
    upstream.setDefault({ status: 200, body: "upstream" });
  });

  after(async () => {
    await killAllGateways();
    await openai.close();
    await upstream.close();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  describe("bound to loopback", () => {
    let gw: GatewayProcess;
    let host: string;
    before(async () => {
      gw = await start();
      host = new URL(gw.url).host;
    });

    it("refuses a cross-site BidiAppend carrying a run_request; the provider is never called", async () => {
      const requestId = randomUUID();
      const asText = await call(
        gw,
        bidiAppendPath,
        { origin: "https://evil.example", "content-type": "text/plain" },
        Buffer.from(toJsonString(BidiAppendRequestSchema, runRequestAppend(requestId))),
      );
      expectRefused(asText, 403, "permission_denied");
      const asProto = await call(
        gw,
        bidiAppendPath,
        { origin: "https://evil.example", "content-type": "application/proto" },
        toBinary(BidiAppendRequestSchema, runRequestAppend(requestId)),
      );
      expectRefused(asProto, 403, "permission_denied");
      await new Promise((r) => setTimeout(r, 300));
      expect(openai.requests).to.have.length(0);
    });

    it("refuses a rebinding Host on RunSSE, BidiAppend, the relay and health; nothing reaches the upstream", async () => {
      const before = upstream.requests.length;
      const evil = { host: "evil.example" };
      const evilWithPort = { host: `evil.example:${new URL(gw.url).port}` };
      const proto = { "content-type": "application/proto" };
      expectRefused(
        await call(gw, runSsePath, { ...evil, "content-type": "application/connect+proto" }, runSseBody("r")),
        403,
        "permission_denied",
      );
      const append = toBinary(BidiAppendRequestSchema, runRequestAppend(randomUUID()));
      expectRefused(await call(gw, bidiAppendPath, { ...evilWithPort, ...proto }, append), 403, "permission_denied");
      expectRefused(await call(gw, "/aiserver.v1.AiService/GetModels", evil), 403, "permission_denied");
      expectRefused(await call(gw, "/__byok/health", evilWithPort), 403, "permission_denied");
      // A loopback name on another port is another server's address.
      expectRefused(await call(gw, "/__byok/health", { host: "127.0.0.1:1" }), 403, "permission_denied");
      expect(upstream.requests.length).to.equal(before);
      expect(openai.requests).to.have.length(0);
    });

    it("answers its own names on its port: 127.0.0.1, localhost and [::1]", async () => {
      const { port } = new URL(gw.url);
      for (const name of ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"]) {
        const res = await call(gw, "/__byok/health", { host: `${name}:${port}` });
        expect(res.status, name).to.equal(200);
      }
    });

    it("refuses a content type that is not Connect's on the Connect routes (415)", async () => {
      const append = toBinary(BidiAppendRequestSchema, runRequestAppend(randomUUID()));
      const plain = await call(gw, bidiAppendPath, { host, "content-type": "text/plain" }, append);
      expectRefused(plain, 415, "invalid_argument");
      expect(plain.headers["accept-post"]).to.equal("application/proto, application/json");
      const form = await call(gw, runSsePath, { "content-type": "application/x-www-form-urlencoded" }, runSseBody("r"));
      expectRefused(form, 415, "invalid_argument");
      expect(openai.requests).to.have.length(0);
    });

    it("serves Cursor itself: no Origin, or Cursor's window origin", async () => {
      openai.enqueue({ text: "hello" });
      const run = new CursorClient(gw.url).startRun({ conversationId: randomUUID(), modelId: MODEL, text: "hi" });
      expect((await run.done).ok).to.equal(true);
      const fromWindow = await call(gw, "/__byok/health", { origin: "vscode-file://vscode-app" });
      expect(fromWindow.status).to.equal(200);
    });

    it("refuses a RunSSE request envelope with the end-stream flag (invalid_argument)", async () => {
      const payload = toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: randomUUID() }));
      const res = await call(
        gw,
        runSsePath,
        { "content-type": "application/connect+proto" },
        encodeEnvelope(EnvelopeFlags.endStream, payload),
      );
      expect(res.status).to.equal(200);
      const [end, ...rest] = new EnvelopeReader().push(res.body);
      expect(rest).to.have.length(0);
      expect(end!.flags).to.equal(EnvelopeFlags.endStream);
      const { error } = parseEndStream(end!.payload);
      expect(error?.code).to.equal("invalid_argument");
      expect(error?.message).to.contain("end-stream flag");
    });

    it("relays other routes for the right Host", async () => {
      const res = await call(gw, "/aiserver.v1.AiService/GetModels", {});
      expect(res.status).to.equal(200);
      expect(res.body.toString()).to.equal("upstream");
    });
  });

  describe("bound to a non-loopback address", () => {
    it("refuses to start without a token, saying why, with exit code 2", async () => {
      const failure = await start({ host: "0.0.0.0" }).then(
        () => undefined,
        (e: Error) => e.message,
      );
      expect(failure).to.match(/exited early with code 2/);
      expect(failure).to.contain("byok: --host 0.0.0.0 is not a loopback address");
      expect(failure).to.contain("security.token");
    });

    it("requires the token on every request; the token never reaches the upstream or the log", async () => {
      const gw = await start({ host: "0.0.0.0", security: { token: TOKEN, allowedOrigins: ["https://ok.example"] } });
      expectRefused(await call(gw, "/__byok/health", {}), 401, "unauthenticated");
      expectRefused(await call(gw, "/__byok/health", { "x-byok-token": "wrong" }), 401, "unauthenticated");
      expectRefused(
        await call(gw, runSsePath, { "content-type": "application/connect+proto" }, runSseBody("r")),
        401,
        "unauthenticated",
      );
      expect((await call(gw, "/__byok/health", { "x-byok-token": TOKEN })).status).to.equal(200);
      const allowed = { "x-byok-token": TOKEN, origin: "https://ok.example" };
      expect((await call(gw, "/__byok/health", allowed)).status).to.equal(200);
      const before = upstream.requests.length;
      expect((await call(gw, "/aiserver.v1.AiService/GetModels", { "x-byok-token": TOKEN })).status).to.equal(200);
      expect(upstream.requests[before]!.headers["x-byok-token"]).to.equal(undefined);
      await gw.stop();
      expect(gw.stderrLines().join("\n")).not.to.contain(TOKEN);
    });
  });
});
