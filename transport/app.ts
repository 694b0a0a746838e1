// The Koa app: the two agent routes served locally, the gateway's own /__byok/ routes, and everything else relayed
// to the upstream untouched (docs/protocol/cursor-transport.md §8.3). No body parser runs ahead of the relay.
import Koa from "koa";
import Router from "@koa/router";
import type { AgentBackend } from "./agent-backend.js";
import type { Logger } from "../log/logger.js";
import { RpcError } from "../cursor/errors.js";
import { bidiAppendHandler } from "./bidi-append.js";
import { BodyBudget } from "./body.js";
import { unaryErrorBody } from "./connect/unary.js";
import type { Diagnostics } from "./diagnostics.js";
import { gate, type GateOptions } from "./gate.js";
import type { Relay } from "./relay.js";
import { runHandler } from "./run.js";
import { runSseHandler } from "./run-sse.js";

const RUN_PATH = "/agent.v1.AgentService/Run";
const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

export function createApp(opts: {
  service: AgentBackend;
  relay: Relay;
  log: Logger;
  version: string;
  diagnostics?: Diagnostics;
  access: Omit<GateOptions, "contentTypes">;
  bodies: { maxRequestBytes: number; budgetBytes: number };
  /** How long a Run stream may take to send its run_request (timers.runRequestWaitMs). */
  runRequestWaitMs: number;
  /** Further front doors served ahead of the relay (the engine's Anthropic Messages endpoint). */
  frontDoors?: Koa.Middleware;
  /** The status page and its API under /__byok/ (docs/status-api.md), behind the same gate. */
  statusPage?: Koa.Middleware;
}): Koa {
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
  // Connect unary (BidiAppend) takes binary or JSON; the Run and RunSSE streams are read as binary envelopes only.
  const contentTypes = new Map([
    [RUN_PATH, ["application/connect+proto"]],
    [RUN_SSE_PATH, ["application/connect+proto"]],
    [BIDI_APPEND_PATH, ["application/proto", "application/json"]],
  ]);
  app.use(gate({ ...opts.access, contentTypes }));
  router.get("/__byok/health", (ctx) => {
    ctx.body = { status: "ok", name: "byok-gateway", version: opts.version };
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
  const { relay } = opts;
  const budget = new BodyBudget(opts.bodies.budgetBytes);
  router.post(
    RUN_PATH,
    runHandler(opts.service, relay, {
      maxRequestBytes: opts.bodies.maxRequestBytes,
      runRequestWaitMs: opts.runRequestWaitMs,
      budget,
    }),
  );
  router.post(RUN_SSE_PATH, runSseHandler(opts.service, relay, budget));
  router.post(BIDI_APPEND_PATH, bidiAppendHandler(opts.service, relay, { ...opts.bodies, budget }));
  router.all("/{*rest}", (ctx) => relay.pass(ctx));
  if (opts.statusPage) app.use(opts.statusPage);
  if (opts.frontDoors) app.use(opts.frontDoors);
  app.use(router.routes());
  app.on("error", (err: Error) => opts.log.error("http error", { error: err.message }));
  return app;
}
