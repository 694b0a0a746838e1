// The Koa app's outermost guard: an exception no handler caught becomes a Connect `internal` error, and the next
// request is served.
import { expect } from "chai";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp } from "../../transport/app.js";
import { createRelay } from "../../transport/relay.js";
import type { AgentBackend } from "../../transport/agent-backend.js";
import type { Diagnostics } from "../../transport/diagnostics.js";
import type { Logger } from "../../log/logger.js";

describe("transport app guard", () => {
  it("answers an uncaught handler exception with a Connect internal error and stays up", async () => {
    const logged: string[] = [];
    let reads = 0;
    const diagnostics = {
      read: () => {
        reads += 1;
        throw new Error("diagnostics broke");
      },
      countStatement: () => {},
    } as unknown as Diagnostics;
    const log: Logger = { info: () => {}, warn: () => {}, error: (msg) => void logged.push(msg) };
    const app = createApp({
      agent: async () => ({ service: {} as AgentBackend, runRequestWaitMs: 30_000 }),
      relay: createRelay({ upstream: "http://127.0.0.1:9", log }),
      log,
      version: "test",
      diagnostics,
      access: { host: "127.0.0.1", port: () => (server.address() as AddressInfo).port },
      bodies: { maxRequestBytes: 1024 * 1024, budgetBytes: 8 * 1024 * 1024 },
    });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const res = await fetch(`${base}/__byok/diagnostics`);
      expect(res.status).to.equal(500);
      expect(res.headers.get("content-type")).to.match(/^application\/json/);
      expect(await res.json()).to.deep.equal({ code: "internal", message: "byok-gateway internal error" });
      expect(logged).to.deep.equal(["request failed unexpectedly"]);
      expect(reads).to.equal(1);
      expect((await fetch(`${base}/__byok/health`)).status).to.equal(200);
    } finally {
      server.close();
    }
  });
});
