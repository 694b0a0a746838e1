// Which requests the listener hands straight to the relay and which the Koa app sees (transport/app.ts): the
// gateway's own routes in any letter case or with a trailing slash stay with Koa, and so does anything the router
// might still match; the gate refuses a direct relay exactly as it refuses any other request.
import { expect } from "chai";
import { createServer, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp } from "../../transport/app.js";
import type { Relay } from "../../transport/relay.js";
import type { Logger } from "../../log/logger.js";

const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

describe("transport app routing", () => {
  const seen: Array<{ via: "koa" | "direct"; url: string }> = [];
  let agentLoads = 0;
  let server: Server;
  let base: string;

  before(async () => {
    const answer = (res: ServerResponse, via: string) => {
      res.writeHead(299, { "x-via": via });
      res.end();
    };
    const relay = {
      pass: async (ctx) => {
        ctx.respond = false;
        seen.push({ via: "koa", url: ctx.originalUrl });
        answer(ctx.res, "koa");
      },
      passRequest: async (request) => {
        seen.push({ via: "direct", url: request.originalUrl });
        answer(request.res, "direct");
      },
    } as Pick<Relay, "pass" | "passRequest"> as Relay;
    const frontDoor = {
      middleware: (_ctx: unknown, next: () => Promise<void>) => next(),
      paths: new Set(["/v1/messages"]),
    };
    server = createServer(
      createApp({
        agent: async () => {
          agentLoads += 1;
          throw new Error("no agent side in this test");
        },
        relay,
        log: quiet,
        version: "test",
        access: { host: "127.0.0.1", port: () => (server.address() as AddressInfo).port, token: "s3cret-token" },
        bodies: { maxRequestBytes: 1024, budgetBytes: 8 * 1024 },
        frontDoors: frontDoor,
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  // node:http rather than fetch, which does not let a test set Host.
  const get = (path: string, headers: Record<string, string> = { "x-byok-token": "s3cret-token" }) => {
    seen.length = 0;
    return new Promise<{ status: number; body: string; seen: typeof seen }>((resolve, reject) => {
      const req = request(`${base}${path}`, { headers }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (text: string) => (body += text));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, seen: [...seen] }));
      });
      req.on("error", reject).end();
    });
  };

  it("relays other paths directly, query included", async () => {
    const r = await get("/aiserver.v1.AiService/AvailableModels?x=1");
    expect(r.status).to.equal(299);
    expect(r.seen).to.deep.equal([{ via: "direct", url: "/aiserver.v1.AiService/AvailableModels?x=1" }]);
  });

  it("keeps the gateway's own routes with Koa, in any case and with a trailing slash", async () => {
    expect(JSON.parse((await get("/__BYOK/health")).body)).to.include({ status: "ok" });
    for (const path of ["/agent.v1.AgentService/Run", "/AGENT.V1.AGENTSERVICE/RUNSSE/", "/v1/Messages", "/__byokx"]) {
      expect((await get(path)).seen, path).to.deep.equal([{ via: "koa", url: path }]);
    }
  });

  it("loads the agent side for an agent request only, once", async () => {
    await get("/__byok/health");
    await get("/some/path");
    expect(agentLoads).to.equal(0);
    const post = (path: string) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "x-byok-token": "s3cret-token", "content-type": "application/connect+proto" },
        body: new Uint8Array(5),
      });
    const answers = await Promise.all([post("/agent.v1.AgentService/RunSSE"), post("/agent.v1.AgentService/RunSSE")]);
    expect(answers.map((a) => a.status)).to.deep.equal([500, 500]); // the guard's answer to the failed load
    expect(agentLoads).to.equal(1);
  });

  it("leaves percent-encoded paths to Koa's router", async () => {
    expect((await get("/agent.v1.AgentService%2FRun")).seen[0]?.via).to.equal("koa");
  });

  it("refuses a direct relay without the token or with a foreign Host, relaying nothing", async () => {
    const noToken = await get("/some/path", {});
    expect(noToken.status).to.equal(401);
    expect(JSON.parse(noToken.body)).to.include({ code: "unauthenticated" });
    const foreign = await get("/some/path", { "x-byok-token": "s3cret-token", host: "evil.example" });
    expect(foreign.status).to.equal(403);
    expect(foreign.seen).to.deep.equal([]);
    expect(noToken.seen).to.deep.equal([]);
  });
});
