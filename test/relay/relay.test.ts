import Router from "@koa/router";
import { expect } from "chai";
import Koa from "koa";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import { gzipSync } from "node:zlib";
import { createJsonLogger } from "../../log/logger.js";
import { createRelay } from "../../transport/relay.js";
import { close, type Handler, listen, type Reply, readAll, within } from "./relay-kit.js";

describe("relay to the upstream", () => {
  let upstream: Server;
  let upstreamHost: string;
  let onUpstream: Handler;
  let gateway: Server;
  let gatewayHost: string;
  let logLines: string[];

  async function startGateway(upstreamUrl: string): Promise<void> {
    const app = new Koa();
    const router = new Router();
    const log = createJsonLogger({ write: (line: string) => logLines.push(line) });
    const relay = createRelay({ upstream: upstreamUrl, log });
    router.all("/{*rest}", (ctx) => relay.pass(ctx));
    app.use(router.routes());
    gateway = createServer(app.callback());
    gatewayHost = await listen(gateway);
  }

  function send(
    method: string,
    path: string,
    opts: { headers?: Record<string, string>; body?: Uint8Array } = {},
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const [hostname, port] = gatewayHost.split(":");
      const req = request({ hostname, port, method, path, headers: opts.headers }, (res) => {
        readAll(res).then((body) => resolve({ status: res.statusCode!, headers: res.headers, body }), reject);
      });
      req.on("error", reject);
      req.end(opts.body);
    });
  }

  beforeEach(async () => {
    logLines = [];
    upstream = createServer((req, res) => onUpstream(req, res));
    upstreamHost = await listen(upstream);
    await startGateway(`http://${upstreamHost}`);
  });

  afterEach(async () => {
    await close(gateway);
    await close(upstream);
  });

  it("forwards method, path, query, end-to-end headers and body bytes unchanged", async () => {
    let seen: { method?: string; url?: string; headers: IncomingHttpHeaders; body: Buffer } | undefined;
    onUpstream = (req, res) => {
      void readAll(req).then((body) => {
        seen = { method: req.method, url: req.url, headers: req.headers, body };
        res.end("ok");
      });
    };
    const body = randomBytes(4096);
    const reply = await send("PUT", "/aiserver.v1.AiService/GetModels?a=1&b=%20x&a=2", {
      headers: { "content-type": "application/proto", "x-cursor-client-version": "2.3.4", authorization: "Bearer t" },
      body,
    });
    expect(reply.status).to.equal(200);
    expect(seen?.method).to.equal("PUT");
    expect(seen?.url).to.equal("/aiserver.v1.AiService/GetModels?a=1&b=%20x&a=2");
    expect(seen?.headers["content-type"]).to.equal("application/proto");
    expect(seen?.headers["x-cursor-client-version"]).to.equal("2.3.4");
    expect(seen?.headers.authorization).to.equal("Bearer t");
    expect(seen?.body.equals(body)).to.equal(true);
  });

  it("rewrites Host to the upstream's", async () => {
    let host: string | undefined;
    onUpstream = (req, res) => {
      host = req.headers.host;
      res.end();
    };
    await send("GET", "/x", { headers: { host: "api2.cursor.sh" } });
    expect(host).to.equal(upstreamHost);
  });

  it("drops hop-by-hop request headers and those named in Connection", async () => {
    let headers: IncomingHttpHeaders = {};
    onUpstream = (req, res) => {
      headers = req.headers;
      res.end();
    };
    await send("POST", "/x", {
      body: Buffer.from("payload"),
      headers: {
        // Node's client only sends a Trailer header on a chunked body.
        "transfer-encoding": "chunked",
        connection: "keep-alive, x-hop-one, X-Hop-Two",
        "keep-alive": "timeout=5",
        "x-hop-one": "1",
        "x-hop-two": "2",
        "proxy-authorization": "Basic abc",
        "proxy-connection": "keep-alive",
        te: "trailers",
        trailer: "x-trail",
        "x-kept": "yes",
      },
    });
    for (const name of [
      "keep-alive",
      "x-hop-one",
      "x-hop-two",
      "proxy-authorization",
      "proxy-connection",
      "te",
      "trailer",
    ]) {
      expect(headers, name).not.to.have.property(name);
    }
    expect(headers["x-kept"]).to.equal("yes");
  });

  it("drops hop-by-hop response headers and keeps repeated end-to-end ones", async () => {
    onUpstream = (req, res) => {
      req.resume();
      res.writeHead(200, [
        "Connection",
        "x-resp-hop",
        "X-Resp-Hop",
        "1",
        "Keep-Alive",
        "timeout=9",
        "Proxy-Authenticate",
        "Basic",
        "Set-Cookie",
        "a=1",
        "Set-Cookie",
        "b=2",
        "X-Kept",
        "yes",
      ]);
      res.end("body");
    };
    const reply = await send("GET", "/x");
    expect(reply.headers).not.to.have.property("x-resp-hop");
    expect(reply.headers).not.to.have.property("proxy-authenticate");
    expect(reply.headers["keep-alive"]).not.to.equal("timeout=9");
    expect(reply.headers["set-cookie"]).to.deep.equal(["a=1", "b=2"]);
    expect(reply.headers["x-kept"]).to.equal("yes");
    expect(reply.body.toString()).to.equal("body");
  });

  it("passes a gzip response through byte-identical with its content-encoding", async () => {
    const zipped = gzipSync(Buffer.from("compressed payload ".repeat(100)));
    onUpstream = (req, res) => {
      req.resume();
      res.writeHead(200, {
        "content-encoding": "gzip",
        "content-type": "application/json",
        "content-length": zipped.length,
      });
      res.end(zipped);
    };
    const reply = await send("GET", "/x", { headers: { "accept-encoding": "gzip" } });
    expect(reply.headers["content-encoding"]).to.equal("gzip");
    expect(reply.headers["content-length"]).to.equal(String(zipped.length));
    expect(reply.body.equals(zipped)).to.equal(true);
  });

  it("passes a gzip request body through without decompressing it", async () => {
    const zipped = gzipSync(Buffer.from("request payload"));
    let seen: { encoding?: string; body: Buffer } | undefined;
    onUpstream = (req, res) => {
      void readAll(req).then((body) => {
        seen = { encoding: req.headers["content-encoding"], body };
        res.end();
      });
    };
    await send("POST", "/x", { headers: { "content-encoding": "gzip" }, body: zipped });
    expect(seen?.encoding).to.equal("gzip");
    expect(seen?.body.equals(zipped)).to.equal(true);
  });

  it("streams the response: the client sees the first chunk before the upstream finishes", async () => {
    let clientSawFirst!: () => void;
    const firstSeen = new Promise<void>((resolve) => (clientSawFirst = resolve));
    let upstreamWaited: Promise<void> = Promise.resolve();
    onUpstream = (req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/connect+proto" });
      res.write("first");
      // The upstream holds the rest back until the client has the first chunk; a buffering relay times out here.
      upstreamWaited = within(firstSeen, 2000, "the first chunk at the client").finally(() => res.end("rest"));
    };
    const [hostname, port] = gatewayHost.split(":");
    const body = await new Promise<string>((resolve, reject) => {
      request({ hostname, port, method: "POST", path: "/agent.v1.AgentService/Other" }, (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
          if (text.startsWith("first")) clientSawFirst();
        });
        res.on("end", () => resolve(text));
      })
        .on("error", reject)
        .end();
    });
    await upstreamWaited;
    expect(body).to.equal("firstrest");
  });

  it("streams the request: the upstream sees the first body chunk before the client finishes", async () => {
    let upstreamSawFirst!: () => void;
    const firstSeen = new Promise<void>((resolve) => (upstreamSawFirst = resolve));
    let received = "";
    onUpstream = (req, res) => {
      req.on("data", (c: Buffer) => {
        received += c.toString();
        if (received.startsWith("first")) upstreamSawFirst();
      });
      req.on("end", () => res.end("done"));
    };
    const [hostname, port] = gatewayHost.split(":");
    const reply = new Promise<string>((resolve, reject) => {
      const req = request({ hostname, port, method: "POST", path: "/upload" }, (res) => {
        readAll(res).then((b) => resolve(b.toString()), reject);
      });
      req.on("error", reject);
      req.write("first");
      within(firstSeen, 2000, "the first chunk at the upstream").then(
        () => req.end("rest"),
        (err: Error) => req.destroy(err),
      );
    });
    expect(await reply).to.equal("done");
    expect(received).to.equal("firstrest");
  });

  it("passes upstream 404 and 500 through unchanged", async () => {
    onUpstream = (req, res) => {
      req.resume();
      const status = req.url === "/missing" ? 404 : 500;
      res.writeHead(status, "Custom Reason", { "content-type": "text/plain", "x-upstream": "yes" });
      res.end(`upstream ${status}`);
    };
    for (const [path, status] of [
      ["/missing", 404],
      ["/broken", 500],
    ] as const) {
      const reply = await send("GET", path);
      expect(reply.status).to.equal(status);
      expect(reply.headers["x-upstream"]).to.equal("yes");
      expect(reply.body.toString()).to.equal(`upstream ${status}`);
    }
  });

  it("answers 502 with a Connect-style unavailable error when the upstream cannot be reached", async () => {
    await close(upstream);
    const reply = await send("POST", "/aiserver.v1.AiService/GetModels");
    expect(reply.status).to.equal(502);
    expect(reply.headers["content-type"]).to.equal("application/json");
    const json = JSON.parse(reply.body.toString());
    expect(json.code).to.equal("unavailable");
    expect(json.message).to.match(/^upstream unreachable: .*ECONNREFUSED/);
    const errors = logLines.map((l) => JSON.parse(l)).filter((r) => r.level === "error");
    expect(errors).to.have.length(1);
    expect(errors[0].path).to.equal("/aiserver.v1.AiService/GetModels");
    upstream = createServer();
    await listen(upstream);
  });

  it("logs method, path (without query), status and duration once the upstream answers", async () => {
    onUpstream = (req, res) => {
      req.resume();
      res.writeHead(404).end();
    };
    await send("GET", "/auth/poll?uuid=secret-ish", { headers: { authorization: "Bearer sk-should-not-appear" } });
    const records = logLines.map((l) => JSON.parse(l));
    expect(records).to.have.length(1);
    expect(records[0]).to.include({ level: "info", method: "GET", path: "/auth/poll", status: 404 });
    expect(records[0].durationMs).to.be.a("number");
    expect(logLines.join("")).not.to.contain("sk-should-not-appear");
  });

  it("keeps the upstream URL's base path in front of the request path", async () => {
    let url: string | undefined;
    onUpstream = (req, res) => {
      url = req.url;
      res.end();
    };
    await close(gateway);
    await startGateway(`http://${upstreamHost}/base/`);
    await send("GET", "/x?y=1");
    expect(url).to.equal("/base/x?y=1");
  });

  it("cancels the upstream call when the client goes away mid-stream", async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    onUpstream = (req, res) => {
      req.resume();
      res.on("close", () => upstreamClosed());
      res.writeHead(200).write("first");
    };
    const [hostname, port] = gatewayHost.split(":");
    const req = request({ hostname, port, method: "GET", path: "/stream" }, (res) => {
      res.once("data", () => req.destroy());
    });
    req.on("error", () => {});
    req.end();
    await within(closed, 2000, "the upstream response to close");
  });

  it("sends the response head before the first body chunk", async () => {
    let clientSawHead!: () => void;
    const headSeen = new Promise<void>((resolve) => (clientSawHead = resolve));
    onUpstream = (req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/connect+proto" });
      res.flushHeaders();
      within(headSeen, 2000, "the response head at the client").then(
        () => res.end("body"),
        () => res.end("late"),
      );
    };
    const [hostname, port] = gatewayHost.split(":");
    const body = await new Promise<string>((resolve, reject) => {
      request({ hostname, port, method: "POST", path: "/agent.v1.AgentService/Other" }, (res) => {
        clientSawHead();
        readAll(res).then((b) => resolve(b.toString()), reject);
      })
        .on("error", reject)
        .end();
    });
    expect(body).to.equal("body");
  });

  it("cancels the upstream call when the client goes away before the upstream answers", async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    let upstreamGotRequest!: () => void;
    const gotRequest = new Promise<void>((resolve) => (upstreamGotRequest = resolve));
    onUpstream = (req, res) => {
      req.resume();
      res.on("close", () => upstreamClosed());
      upstreamGotRequest();
    };
    const [hostname, port] = gatewayHost.split(":");
    const req = request({ hostname, port, method: "GET", path: "/slow" });
    req.on("error", () => {});
    req.end();
    await within(gotRequest, 2000, "the request at the upstream");
    req.destroy();
    await within(closed, 2000, "the upstream response to close");
  });

  it("refuses a non-http(s) upstream URL", () => {
    expect(() => createRelay({ upstream: "ftp://example.com", log: createJsonLogger({ write: () => true }) })).to.throw(
      /http\(s\)/,
    );
  });
});
