// Who may talk to the Connect port (docs/protocol/cursor-transport.md §9). Every request passes here before any
// route reads its body: a Host that is not the gateway's own address (DNS rebinding), a browser Origin that is not
// allowed (cross-site POSTs, which need no CORS preflight as text/plain), a missing or wrong token when one is
// configured, and a non-Connect content type on a Connect route are refused at once.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Context, Middleware, Next } from "koa";
import { RpcError } from "../cursor/errors.js";
import { unaryErrorBody } from "./connect/unary.js";

/** The header a token-guarded gateway expects; Cursor's own Authorization header belongs to the upstream. */
export const TOKEN_HEADER = "x-byok-token";
/** A browser cannot add headers: on the status pages the token may come as this cookie (set by the page itself,
 * HttpOnly and SameSite=Strict), or once as `?token=` on the page's own address (docs/status-api.md §1). */
export const TOKEN_COOKIE = "byok_token";
/** The gateway's own routes (health, diagnostics, the status page) live under this path. */
export const STATUS_PREFIX = "/__byok";
/** Cursor's workbench window: a web page cannot carry this origin. */
const CURSOR_ORIGIN = "vscode-file://vscode-app";
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];

export interface GateOptions {
  /** The port the gateway listens on (known only once it listens: port 0 picks one). */
  port: () => number;
  /** The address given to listen(); a specific non-wildcard address is accepted as a Host too. */
  host: string;
  token?: string;
  /**
   * POST routes that check a token of their own (the Anthropic Messages endpoint: x-api-key or Bearer, which
   * Anthropic clients send and x-byok-token they cannot): the gate leaves the token to them and still checks Host
   * and Origin. Other methods on these paths are not theirs (they would be relayed) and need x-byok-token.
   */
  selfAuthenticatedPaths?: ReadonlySet<string>;
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  /** Connect routes: path → the content types each accepts. */
  contentTypes: ReadonlyMap<string, readonly string[]>;
}

/** What the gate reads of a request: a Koa context offers it, and so does a request relayed ahead of Koa. */
export interface GateRequest {
  method: string;
  path: string;
  /** A header's value, "" when absent (Koa's ctx.get). */
  header(name: string): string;
  /** The `?token=` query parameter (read on the status page's own address only). */
  queryToken(): unknown;
  /** The token cookie (read under /__byok/ only). */
  cookieToken(): string | undefined;
}

/** Refusal of a request, or undefined when it may pass. */
export type GateCheck = (request: GateRequest) => Refusal | undefined;

export function gateCheck(opts: GateOptions): GateCheck {
  const origins = new Set([CURSOR_ORIGIN, ...(opts.allowedOrigins ?? [])].map((o) => o.toLowerCase()));
  const tokenDigest = opts.token === undefined ? undefined : digest(opts.token);
  const hostAllowed = hostCheck(opts);
  return (request) => {
    const host = authority(request);
    if (!host || !hostAllowed(host)) {
      return { error: new RpcError(`Host ${JSON.stringify(host ?? "")} is not this gateway`, "permission_denied") };
    }
    const origin = request.header("origin");
    if (origin && !origins.has(origin.toLowerCase())) {
      return { error: new RpcError(`Origin ${JSON.stringify(origin)} is not allowed`, "permission_denied") };
    }
    const ownToken = request.method === "POST" && (opts.selfAuthenticatedPaths?.has(request.path) ?? false);
    if (tokenDigest && !ownToken && !tokenMatches(presentedToken(request), tokenDigest)) {
      return { error: new RpcError(`missing or wrong ${TOKEN_HEADER}`, "unauthenticated") };
    }
    const accepted = opts.contentTypes.get(request.path);
    const contentType = request.header("content-type");
    if (request.method === "POST" && accepted && !accepted.includes(mediaType(contentType))) {
      const message = `content-type ${JSON.stringify(contentType)} is not accepted; use ${accepted.join(" or ")}`;
      return { error: new RpcError(message, "invalid_argument"), status: 415, acceptPost: accepted.join(", ") };
    }
    return undefined;
  };
}

export function gate(check: GateCheck): Middleware {
  return async (ctx: Context, next: Next) => {
    const refusal = check({
      method: ctx.method,
      path: ctx.path,
      header: (name) => ctx.get(name),
      queryToken: () => ctx.query.token,
      cookieToken: () => ctx.cookies.get(TOKEN_COOKIE),
    });
    if (refusal) return refuse(ctx, refusal);
    await next();
  };
}

/** The header anywhere; the cookie only under /__byok/, the query only on the page's own address. */
function presentedToken(request: GateRequest): string {
  const header = request.header(TOKEN_HEADER);
  const { path } = request;
  if (header !== "" || (path !== STATUS_PREFIX && !path.startsWith(`${STATUS_PREFIX}/`))) return header;
  const query = request.queryToken();
  const onPage = (path === STATUS_PREFIX || path === `${STATUS_PREFIX}/`) && typeof query === "string";
  return onPage ? query : (request.cookieToken() ?? "");
}

export interface Refusal {
  error: RpcError;
  /** Overrides the code's HTTP status (415 for a content type, as the Connect protocol has it). */
  status?: number;
  acceptPost?: string;
}

/** The Connect unary error shape on every route; the unread body is not waited for. */
function refuse(ctx: Context, refusal: Refusal): void {
  const { status, headers, body } = refusalResponse(refusal, ctx.req.httpVersionMajor);
  ctx.status = status;
  ctx.set(headers);
  ctx.body = body;
}

/** A refusal as an HTTP answer: status, headers (an HTTP/1 connection is closed) and the error JSON. */
export function refusalResponse(
  refusal: Refusal,
  httpVersionMajor: number,
): { status: number; headers: Record<string, string>; body: string } {
  const { status, body } = unaryErrorBody(refusal.error);
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (refusal.acceptPost) headers["accept-post"] = refusal.acceptPost;
  if (httpVersionMajor === 1) headers.connection = "close";
  return { status: refusal.status ?? status, headers, body };
}

/** HTTP/2 carries the authority as a pseudo-header; HTTP/1.1 as Host. */
function authority(request: GateRequest): string | undefined {
  const value = request.header(":authority") || request.header("host");
  return value !== "" ? value.toLowerCase() : undefined;
}

/**
 * Accepted: the loopback names and the listening address on the listening port, and each configured entry —
 * `name:port` exactly, a bare `name` on any port.
 */
function hostCheck(opts: GateOptions): (authority: string) => boolean {
  const own = [...LOOPBACK_NAMES];
  const bound = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  if (!isWildcard(opts.host)) own.push(bound.toLowerCase());
  const configured = (opts.allowedHosts ?? []).map((h) => h.toLowerCase());
  const anyPort = new Set(configured.filter((h) => splitAuthority(h).port === undefined));
  const exact = new Set(configured.filter((h) => !anyPort.has(h)));
  // Asked once, at the first request (the port is known by then): server.address() is a system call.
  let listening: string | undefined;
  return (value) => {
    const { name, port } = splitAuthority(value);
    if (anyPort.has(name) || exact.has(value)) return true;
    listening ??= String(opts.port());
    return own.includes(name) && (port ?? "80") === listening;
  };
}

function splitAuthority(value: string): { name: string; port: string | undefined } {
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(value);
  return match ? { name: match[1]!, port: match[2] } : { name: value, port: undefined };
}

function isWildcard(host: string): boolean {
  return host === "0.0.0.0" || host === "::";
}

/** Loopback: the only addresses where no one but this machine's processes can connect. */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function mediaType(contentType: string): string {
  return contentType.split(";")[0]!.trim().toLowerCase();
}

// Digests of equal length make the comparison constant-time whatever the presented token's length.
function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function tokenMatches(presented: string, expected: Buffer): boolean {
  return presented !== "" && timingSafeEqual(digest(presented), expected);
}
