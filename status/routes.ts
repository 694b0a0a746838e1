// The status page and its JSON API under /__byok/ (docs/status-api.md). Mounted behind the transport's gate, which
// has already refused foreign Hosts and Origins and checked the gateway token (header, or the page's cookie). A
// browser opens /__byok/?token=… once: the token moves into an HttpOnly, SameSite=Strict cookie and the address bar
// is cleaned by a redirect.
import type { Context, Middleware } from "koa";
import * as z from "zod";
import { STATUS_PREFIX, TOKEN_COOKIE } from "../transport/gate.js";
import { pageBundle } from "./bundle.js";
import { serveEvents } from "./events.js";
import { maskSecrets } from "./mask.js";
import type { StatusSource, UsageRow } from "./types.js";

const PAGE_SECURITY = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
const usageQuery = z.object({ days: z.coerce.number().int().min(1).max(366).default(30) });
/** Usage rows one answer carries at most (models × days). */
const MAX_USAGE_ROWS = 2_000;
const DAY_MS = 86_400_000;
const API = `${STATUS_PREFIX}/api`;

export function statusRoutes(opts: { source: StatusSource; tokenRequired: boolean }): Middleware {
  const { source } = opts;
  const routes = new Map<string, (ctx: Context) => void | Promise<void>>([
    [STATUS_PREFIX, (ctx) => redirect(ctx, 308, `${STATUS_PREFIX}/${ctx.search}`)],
    [`${STATUS_PREFIX}/`, (ctx) => servePage(ctx, opts.tokenRequired)],
    [`${STATUS_PREFIX}/assets/app.js`, async (ctx) => asset(ctx, "application/javascript", (await pageBundle()).js)],
    [`${STATUS_PREFIX}/assets/app.css`, async (ctx) => asset(ctx, "text/css", (await pageBundle()).css)],
    [`${API}/runs/live`, (ctx) => json(ctx, { runs: source.liveRuns() })],
    [`${API}/runs/recent`, (ctx) => json(ctx, { runs: source.recentRuns() })],
    [`${API}/conversations`, (ctx) => serveConversations(ctx, source)],
    [`${API}/usage`, (ctx) => serveUsage(ctx, source)],
    [`${API}/aep/sessions`, (ctx) => serveAepSessions(ctx, source)],
    [`${API}/config`, (ctx) => json(ctx, { version: source.version, config: maskSecrets(source.config()) })],
    [`${API}/events`, (ctx) => serveEvents(ctx, source)],
  ]);
  return async (ctx, next) => {
    const route = ctx.method === "GET" || ctx.method === "HEAD" ? routes.get(ctx.path) : undefined;
    return route ? route(ctx) : next();
  };
}

function servePage(ctx: Context, tokenRequired: boolean): void {
  const token = ctx.query.token;
  if (token !== undefined) {
    // The gate has checked it; a gateway without a token has nothing to remember.
    if (tokenRequired && typeof token === "string") {
      ctx.cookies.set(TOKEN_COOKIE, token, { httpOnly: true, sameSite: "strict", path: STATUS_PREFIX });
    }
    return redirect(ctx, 303, `${STATUS_PREFIX}/`);
  }
  ctx.set({ ...PAGE_SECURITY, "cache-control": "no-store" });
  ctx.type = "text/html; charset=utf-8";
  ctx.body = PAGE_HTML;
}

async function serveConversations(ctx: Context, source: StatusSource): Promise<void> {
  const page = parsed(ctx, pageQuery);
  if (page) json(ctx, { ...page, ...(await source.conversations(page)) });
}

async function serveUsage(ctx: Context, source: StatusSource): Promise<void> {
  const query = parsed(ctx, usageQuery);
  if (!query) return;
  const since = new Date(Date.now() - (query.days - 1) * DAY_MS).toISOString().slice(0, 10);
  const rows = await source.usage(since, MAX_USAGE_ROWS);
  json(ctx, { since, rows: rows.map(withCacheShare) });
}

function serveAepSessions(ctx: Context, source: StatusSource): void {
  const sessions = source.aepSessions();
  json(ctx, { enabled: sessions !== undefined, sessions: sessions ?? [] });
}

function redirect(ctx: Context, status: number, location: string): void {
  ctx.status = status;
  ctx.set("location", location);
  ctx.body = "";
}

/** The share of input tokens served from the provider's prompt cache; null without input. */
function withCacheShare(row: UsageRow): UsageRow & { cacheHitShare: number | null } {
  return { ...row, cacheHitShare: row.input > 0 ? row.cacheRead / row.input : null };
}

function json(ctx: Context, body: unknown): void {
  ctx.set("cache-control", "no-store");
  ctx.body = body;
}

function asset(ctx: Context, type: string, text: string): void {
  ctx.set({ "cache-control": "no-cache", "x-content-type-options": "nosniff" });
  ctx.type = type;
  ctx.body = text;
}

function parsed<T>(ctx: Context, schema: z.ZodType<T>): T | undefined {
  const result = schema.safeParse(ctx.query);
  if (result.success) return result.data;
  ctx.status = 400;
  ctx.body = { code: "invalid_argument", message: z.prettifyError(result.error) };
  return undefined;
}

const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>byok-gateway status</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${STATUS_PREFIX}/assets/app.css">
<script defer src="${STATUS_PREFIX}/assets/app.js"></script>
</head>
<body><noscript>The status page needs JavaScript; the same facts are at ${STATUS_PREFIX}/api/.</noscript></body>
</html>
`;
