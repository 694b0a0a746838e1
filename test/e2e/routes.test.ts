// The gateway's own /__byok/ routes and the relay of every other path to the upstream (README.md "Pointing
// Cursor at it", docs/protocol/cursor-transport.md §8.3), against the real gateway process and a fake upstream.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { waitUntil } from "../support/util.js";
import { closedPort, httpCall } from "./raw-http.js";

describe("e2e: gateway routes and the upstream relay", function () {
  this.timeout(10_000);
  let dataDir: string;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;

  before(async function () {
    this.timeout(30_000);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-routes-"));
    upstream = await startFakeUpstream();
    gw = await startGatewayProcess({ dataDir, config: { models: [] }, upstream: upstream.url });
  });
  after(async () => {
    await killAllGateways();
    await upstream.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  describe('gateway routes (README.md "Pointing Cursor at it")', () => {
    it("GET /__byok/health answers 200 JSON with status ok", async () => {
      const res = await fetch(`${gw.url}/__byok/health`);
      expect(res.status).to.equal(200);
      expect(res.headers.get("content-type")).to.match(/^application\/json/);
      expect(await res.json()).to.include({ status: "ok", name: "byok-gateway" });
      expect(upstream.requests.some((r) => r.url.startsWith("/__byok/"))).to.equal(false);
    });

    it("an unknown /__byok/ path answers 404 JSON and is not relayed", async () => {
      const res = await fetch(`${gw.url}/__byok/x`, { method: "POST", body: "{}" });
      expect(res.status).to.equal(404);
      expect(res.headers.get("content-type")).to.match(/^application\/json/);
      expect(await res.json()).to.deep.equal({ code: "not_found", message: "no gateway route POST /__byok/x" });
      expect(upstream.requests.some((r) => r.url.startsWith("/__byok/"))).to.equal(false);
    });
  });

  describe("relay to the upstream (docs/protocol/cursor-transport.md §8.3)", () => {
    it("forwards method, path, query, end-to-end headers and body, and returns the upstream's answer untouched", async () => {
      const answer = Uint8Array.from([0x0a, 0x03, 0x61, 0x62, 0x63, 0x00, 0xff]);
      upstream.enqueue({
        status: 207,
        headers: { "content-type": "application/proto", "x-upstream": "yes" },
        body: answer,
      });
      const seen = upstream.requests.length;
      const res = await httpCall(`${gw.url}/aiserver.v1.AiService/GetModels?x=1&y=two`, {
        method: "POST",
        headers: {
          "content-type": "application/proto",
          authorization: "Bearer cursor-session-token",
          "x-cursor-client-version": "3.16.17",
          connection: "keep-alive, x-hop-named",
          "keep-alive": "timeout=5",
          "x-hop-named": "dropped because Connection names it",
          te: "trailers",
        },
        body: [Buffer.from([1, 2, 3]), Buffer.from("rest of the body")], // chunked on the way in
      });

      expect(res.status).to.equal(207);
      expect(res.headers["x-upstream"]).to.equal("yes");
      expect(res.headers["content-type"]).to.equal("application/proto");
      expect(new Uint8Array(res.body)).to.deep.equal(answer);

      const [got] = (await upstream.waitForRequests(seen + 1)).slice(seen);
      expect(got!.httpVersion).to.equal("1.1"); // an HTTP/1.1 call stays HTTP/1.1 upstream
      expect(got!.method).to.equal("POST");
      expect(got!.url).to.equal("/aiserver.v1.AiService/GetModels?x=1&y=two");
      expect(got!.body).to.deep.equal(Buffer.concat([Buffer.from([1, 2, 3]), Buffer.from("rest of the body")]));
      expect(got!.headers).to.include({
        host: new URL(upstream.url).host,
        "content-type": "application/proto",
        authorization: "Bearer cursor-session-token",
        "x-cursor-client-version": "3.16.17",
      });
      for (const hop of ["keep-alive", "x-hop-named", "te"]) expect(got!.headers, hop).not.to.have.property(hop);
    });

    it("passes gzip-encoded bodies through byte for byte, both ways", async () => {
      const responseBody = gzipSync(Buffer.from(JSON.stringify({ models: ["a", "b", "c"] })));
      const requestBody = gzipSync(Buffer.from("request payload ".repeat(20)));
      upstream.enqueue({
        status: 200,
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: responseBody,
      });
      const seen = upstream.requests.length;
      const res = await httpCall(`${gw.url}/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip", "accept-encoding": "gzip" },
        body: [requestBody],
      });
      expect(res.status).to.equal(200);
      expect(res.headers["content-encoding"]).to.equal("gzip");
      expect(res.body).to.deep.equal(responseBody);
      const [got] = (await upstream.waitForRequests(seen + 1)).slice(seen);
      expect(got!.headers["content-encoding"]).to.equal("gzip");
      expect(got!.body).to.deep.equal(requestBody);
    });

    it("answers 502 JSON unavailable when the upstream cannot be reached", async () => {
      const unreachableDir = await mkdtemp(join(tmpdir(), "byok-e2e-unreachable-"));
      const unreachable = await startGatewayProcess({
        dataDir: unreachableDir,
        config: { models: [] },
        upstream: `http://127.0.0.1:${await closedPort()}`,
      });
      try {
        const res = await httpCall(`${unreachable.url}/aiserver.v1.AiService/GetModels?x=1`, {
          method: "POST",
          body: [Buffer.from("x")],
        });
        expect(res.status).to.equal(502);
        expect(res.headers["content-type"]).to.match(/^application\/json/);
        const body = JSON.parse(res.body.toString("utf8")) as { code: string; message: string };
        expect(body.code).to.equal("unavailable");
        expect(body.message).to.match(/^upstream unreachable: .*ECONNREFUSED/);
        await waitUntil(
          () => unreachable.stderrLines().some((l) => l.includes("relay upstream unreachable")),
          2_000,
          () => "no relay error log line",
        );
      } finally {
        await unreachable.stop();
        await rm(unreachableDir, { recursive: true, force: true });
      }
    });
  });
});
