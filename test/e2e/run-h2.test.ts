// The HTTP/2 `Run` bidi stream (docs/protocol/cursor-transport.md §1.2) with the stock connect-node client in bidi
// mode: a whole closed-loop turn (tool call, result, final text, the three endings) over cleartext HTTP/2 and over
// TLS with a certificate made for the test, and a Run for a model the gateway does not serve relayed to the
// upstream over HTTP/2 byte for byte, trailers included.
import { expect } from "chai";
import { create, toBinary } from "@bufbuild/protobuf";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { connect } from "node:http2";
import { get as httpsGet } from "node:https";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AgentClientMessageSchema,
  AgentServerMessageSchema,
  type AgentClientMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { encodeEnvelope, EnvelopeFlags } from "../../transport/connect/envelope.js";
import { createWorkspace } from "../support/client-workspace.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { driveRun, RUN_PATH, runClient, runRequest, type RunCallResult } from "../support/run-client.js";

/** One Read round trip, then the final text. */
function scriptReadTurn(openai: FakeOpenAI): void {
  openai.enqueue(
    {
      text: "Reading it.",
      toolCalls: [{ id: "call_read_1", name: "Read", args: { path: "src/a.txt" } }],
      usage: { prompt_tokens: 10, completion_tokens: 5 },
    },
    { text: "It says hello.", usage: { prompt_tokens: 20, completion_tokens: 4 } },
  );
}

function expectClosedLoop(result: RunCallResult, openai: FakeOpenAI, calls: number): void {
  expect(result.error, result.error?.message).to.equal(undefined);
  const kinds = result.kinds;
  expect(kinds).to.include("exec:readArgs");
  const ended = kinds.indexOf("turnEnded");
  expect(ended).to.be.greaterThan(kinds.indexOf("exec:readArgs"));
  // turn_ended, then the checkpoints that close the turn (docs/protocol/cursor-run.md §10.2); then the end-stream.
  expect(kinds.slice(ended)).to.deep.equal(["turnEnded", "checkpoint", "checkpoint", "checkpoint"]);
  const second = openai.requests[calls - 1]!.body as { messages: Array<{ role: string; content: unknown }> };
  const tool = second.messages.find((m) => m.role === "tool");
  expect(JSON.stringify(tool?.content)).to.contain("hello");
}

describe("e2e: the HTTP/2 Run stream", () => {
  let dir: string;
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;
  let tlsGw: GatewayProcess;
  let cert: Buffer;

  before(async function () {
    this.timeout(60_000); // two gateways start on a shared machine
    dir = await mkdtemp(join(tmpdir(), "byok-run-h2-"));
    [openai, upstream] = await Promise.all([startFakeOpenAI(), startFakeUpstream()]);
    // A certificate for 127.0.0.1 and localhost, made here: what mkcert gives a user, without the trusted CA.
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    cert = await readFile(join(dir, "cert.pem"));
    const models = [{ id: "m", provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-run", model: "gpt-test" }];
    [gw, tlsGw] = await Promise.all([
      startGatewayProcess({ dataDir: join(dir, "plain"), upstream: upstream.url, config: { models } }),
      startGatewayProcess({
        dataDir: join(dir, "tls"),
        upstream: upstream.url,
        config: { models, tls: { cert: join(dir, "cert.pem"), key: join(dir, "key.pem") } },
      }),
    ]);
  });
  after(async () => {
    await killAllGateways();
    await Promise.all([openai.close(), upstream.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  it("runs a closed-loop turn over cleartext HTTP/2 (h2c)", async () => {
    scriptReadTurn(openai);
    const calls = openai.requests.length + 2;
    const result = await driveRun(runClient(gw.url), [runRequest("m")], {
      workspace: createWorkspace({ "src/a.txt": "hello\n" }),
    });
    expectClosedLoop(result, openai, calls);
  });

  it("runs a closed-loop turn over TLS with ALPN h2, on the same port as HTTPS/1.1", async () => {
    expect(tlsGw.url).to.match(/^https:\/\//);
    scriptReadTurn(openai);
    const calls = openai.requests.length + 2;
    const result = await driveRun(runClient(tlsGw.url, { ca: cert }), [runRequest("m")], {
      workspace: createWorkspace({ "src/a.txt": "hello\n" }),
    });
    expectClosedLoop(result, openai, calls);
    const health = await new Promise<string>((resolve, reject) => {
      httpsGet(`${tlsGw.url}/__byok/health`, { ca: cert }, (res) => {
        let body = `${res.httpVersion} `;
        res.on("data", (c: Buffer) => (body += c));
        res.on("end", () => resolve(body));
      }).on("error", reject);
    });
    expect(health).to.match(/^1\.1 .*"status":"ok"/);
  });

  it("relays a Run for a model it does not serve over HTTP/2, byte for byte both ways, trailers included", async () => {
    const early = create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
    const first = create(AgentClientMessageSchema, runRequest("cursor-own-model"));
    const later = create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
    const frame = (m: AgentClientMessage) => encodeEnvelope(0, toBinary(AgentClientMessageSchema, m));
    const text = create(AgentServerMessageSchema, {
      message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text: "from Cursor" } } } },
    });
    const answer = Buffer.concat([
      encodeEnvelope(0, toBinary(AgentServerMessageSchema, text)),
      encodeEnvelope(EnvelopeFlags.endStream, Buffer.from("{}")),
    ]);
    upstream.enqueue({
      status: 200,
      headers: { "content-type": "application/connect+proto", "x-upstream": "yes" },
      body: answer,
      trailers: { "x-upstream-trailer": "done" },
    });
    const session = connect(gw.url);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": RUN_PATH,
        "content-type": "application/connect+proto",
        "connect-protocol-version": "1",
        "x-request-id": randomUUID(),
      });
      // Frames before routing (a heartbeat), the run_request split across writes, then one after it.
      const sent = Buffer.concat([frame(early), frame(first), frame(later)]);
      stream.write(sent.subarray(0, 7));
      stream.write(sent.subarray(7, sent.length - 3));
      setTimeout(() => stream.end(sent.subarray(sent.length - 3)), 50);
      const [headers, trailers, body] = await Promise.all([
        new Promise<Record<string, unknown>>((resolve) => stream.once("response", resolve)),
        new Promise<Record<string, unknown>>((resolve) => stream.once("trailers", resolve)),
        (async () => {
          const parts: Buffer[] = [];
          for await (const part of stream) parts.push(part as Buffer);
          return Buffer.concat(parts);
        })(),
      ]);
      expect(headers[":status"]).to.equal(200);
      expect(headers["x-upstream"]).to.equal("yes");
      expect(trailers["x-upstream-trailer"]).to.equal("done");
      expect(body.equals(answer)).to.equal(true);
      const seen = upstream.requests.at(-1)!;
      expect(seen.httpVersion).to.equal("2.0");
      expect(seen.url).to.equal(RUN_PATH);
      expect(seen.body.equals(sent)).to.equal(true);
    } finally {
      session.close();
    }
  });
});
