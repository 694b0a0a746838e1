// The gateway's request listener: the two agent routes served locally, the gateway's own /__byok/ routes and the
// front doors in a Koa app, and everything else relayed to the upstream untouched (docs/protocol/cursor-transport.md
// §8.3). No body parser runs ahead of the relay.
import type { IncomingMessage, RequestListener } from "node:http";
import Koa from "koa";
import Router from "@koa/router";
import type { AgentBackend } from "./agent-backend.js";
import type { Logger } from "../log/logger.js";
import { RpcError } from "../cursor/errors.js";
import { BodyBudget } from "./body.js";
import { unaryErrorBody } from "./connect/unary.js";
import type { Diagnostics } from "./diagnostics.js";
import { gate, gateCheck, type GateCheck, type GateOptions, refusalResponse, STATUS_PREFIX } from "./gate.js";
import type { Relay, RelayedRequest } from "./relay.js";

const RUN_PATH = "/agent.v1.AgentService/Run";
const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

/** What the agent routes need from the engine, loaded on first use (engine/gateway.ts). */
export interface AgentSide {
  service: AgentBackend;
  /** How long a Run stream may take to send its run_request (timers.runRequestWaitMs). */
  runRequestWaitMs: number;
}

export interface AppOptions {
  /** The agent side; called per agent request until it resolves, so it must hand out one load. */
  agent: () => Promise<AgentSide>;
  relay: Relay;
  log: Logger;
  version: string;
  diagnostics?: Diagnostics;
  access: Omit<GateOptions, "contentTypes">;
  bodies: { maxRequestBytes: number; budgetBytes: number };
  /** Further front doors served ahead of the relay (the engine's Anthropic Messages endpoint), on these paths. */
  frontDoors?: { middleware: Koa.Middleware; paths: ReadonlySet<string> };
  /** The status page and its API under /__byok/ (docs/status-api.md), behind the same gate. */
  statusPage?: Koa.Middleware;
}

export function createApp(opts: AppOptions): RequestListener {
  // Connect unary (BidiAppend) takes binary or JSON; the Run and RunSSE streams are read as binary envelopes only.
  const contentTypes = new Map([
    [RUN_PATH, ["application/connect+proto"]],
    [RUN_SSE_PATH, ["application/connect+proto"]],
    [BIDI_APPEND_PATH, ["application/proto", "application/json"]],
  ]);
  const check = gateCheck({ ...opts.access, contentTypes });
  const koa = koaApp(opts, check).callback();
  const ownPaths = new Set([...contentTypes.keys(), ...(opts.frontDoors?.paths ?? [])].map((p) => p.toLowerCase()));
  return (req, res) => {
    const path = relayedPath(req.url ?? "", ownPaths);
    if (path === undefined) return void koa(req, res);
    void relayDirectly(opts, check, { req, res, originalUrl: req.url!, path });
  };
}

/**
 * The path of a request that only the relay serves, or undefined when the Koa app must see it: its own routes,
 * compared as Koa's router does (case-insensitive, a trailing slash allowed), and anything unusual (an absolute-form
 * target, percent-encoding) that the router might still match.
 */
function relayedPath(url: string, ownPaths: ReadonlySet<string>): string | undefined {
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  if (!path.startsWith("/") || path.includes("%")) return undefined;
  const lower = path.toLowerCase();
  const bare = lower.length > 1 && lower.endsWith("/") ? lower.slice(0, -1) : lower;
  return bare.startsWith(STATUS_PREFIX) || ownPaths.has(bare) ? undefined : path;
}

/**
 * Every other path goes to the upstream without Koa's context, router and middleware: the same gate (Host, Origin,
 * token) and the same relay, at a fraction of the per-request cost (docs/performance.md).
 */
async function relayDirectly(opts: AppOptions, check: GateCheck, request: RelayedRequest): Promise<void> {
  const { req, res } = request;
  try {
    const refusal = check({
      method: req.method ?? "GET",
      path: request.path,
      header: (name) => headerValue(req, name),
      // Neither is read off /__byok/: a relayed path takes the token from its header only.
      queryToken: () => undefined,
      cookieToken: () => undefined,
    });
    if (!refusal) return await opts.relay.passRequest(request);
    const { status, headers, body } = refusalResponse(refusal, req.httpVersionMajor);
    res.writeHead(status, { ...headers, "content-length": Buffer.byteLength(body) });
    res.end(body);
  } catch (err) {
    opts.log.error("request failed unexpectedly", { method: req.method, path: request.path, error: err });
    if (res.headersSent) return void res.destroy();
    const { status, body } = unaryErrorBody(new RpcError("byok-gateway internal error", "internal"));
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body);
  }
}

/** A header as Koa's ctx.get reads it: "" when absent. */
function headerValue(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return typeof value === "string" ? value : (value?.join(", ") ?? "");
}

type Handler = (ctx: Koa.Context) => Promise<void>;

/**
 * The three agent routes' handlers, built once the agent side and their modules are loaded (the Connect message
 * schemas are most of the bundle: a gateway that only relays never parses them).
 */
function agentHandlers(opts: AppOptions): () => Promise<{ run: Handler; runSse: Handler; bidiAppend: Handler }> {
  const budget = new BodyBudget(opts.bodies.budgetBytes);
  let built: Promise<{ run: Handler; runSse: Handler; bidiAppend: Handler }> | undefined;
  const build = async () => {
    const [{ service, runRequestWaitMs }, { runHandler }, { runSseHandler }, { bidiAppendHandler }] = await Promise.all(
      [opts.agent(), import("./run.js"), import("./run-sse.js"), import("./bidi-append.js")],
    );
    const { relay } = opts;
    return {
      run: runHandler(service, relay, { maxRequestBytes: opts.bodies.maxRequestBytes, runRequestWaitMs, budget }),
      runSse: runSseHandler(service, relay, budget),
      bidiAppend: bidiAppendHandler(service, relay, { ...opts.bodies, budget }),
    };
  };
  return () => {
    built ??= build();
    return built;
  };
}

function koaApp(opts: AppOptions, check: GateCheck): Koa {
  const app = new Koa();
  // Outermost: an exception no handler caught is logged and answered as a Connect error (Koa's own answer is text).
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      opts.log.error("request failed unexpectedly", { method: ctx.method, path: ctx.path, error: err });
      if (ctx.headerSent) return void ctx.res.destroy();
      const { status, body } = unaryErrorBody(new RpcError("byok-gateway internal error", "internal"));
      ctx.status = status;
      ctx.type = "application/json";
      ctx.body = body;
    }
  });
  const router = new Router();
  app.use(gate(check));
  // Text, not an object: Koa's object path tests `instanceof Response`, which loads Node's fetch implementation
  // (~15 ms) at the first health check of every start.
  const health = JSON.stringify({ status: "ok", name: "byok-gateway", version: opts.version });
  router.get("/__byok/health", (ctx) => {
    ctx.type = "application/json";
    ctx.body = health;
  });
  const { diagnostics } = opts;
  if (diagnostics) {
    router.get("/__byok/diagnostics", (ctx) => {
      ctx.body = diagnostics.read(ctx.query.reset === "1");
    });
  }
  router.all("/__byok/{*rest}", (ctx) => {
    ctx.status = 404;
    ctx.body = { code: "not_found", message: `no gateway route ${ctx.method} ${ctx.path}` };
  });
  const handlers = agentHandlers(opts);
  router.post(RUN_PATH, async (ctx) => (await handlers()).run(ctx));
  router.post(RUN_SSE_PATH, async (ctx) => (await handlers()).runSse(ctx));
  router.post(BIDI_APPEND_PATH, async (ctx) => (await handlers()).bidiAppend(ctx));
  router.all("/{*rest}", (ctx) => opts.relay.pass(ctx));
  if (opts.statusPage) app.use(opts.statusPage);
  if (opts.frontDoors) app.use(opts.frontDoors.middleware);
  app.use(router.routes());
  app.on("error", (err: Error) => opts.log.error("http error", { error: err.message }));
  return app;
}
