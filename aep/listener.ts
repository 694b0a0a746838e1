// The AEP v1 WebSocket endpoint: its own HTTP server, upgrades only at /ws. Loopback by default. A token is always
// required (aep/admission.ts), presented as `Authorization: Bearer` or as init data.token; a request without Origin
// (SDKs, scripts) is allowed, a browser Origin only when the config lists it, so a web page cannot drive a local
// worker. Sessions are bound to the token that opened them.
import { createServer, type IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import type { AddressInfo, Socket as NetSocket } from "node:net";
import { createActor, fromPromise } from "xstate";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { redact, type Logger } from "../log/logger.js";
import { AttachRefused, aepConnectionMachine, type InitRequest } from "../machines/aep-connection.js";
import { DEFAULT_LIMITS, OutboundQueue, type QueueLimits } from "./wire/backpressure.js";
import {
  decodeClientFrame,
  serverEnvelope,
  type ErrorCause,
  type ErrorCode,
  type ServerEvent,
} from "./wire/envelope.js";
import { AepRegistry, type AepSessionSummary } from "./registry.js";
import { homeFor, workdirChecker, workdirResolver, type WorkdirPolicy } from "./workdir.js";
import type { AepSession, SessionDeps } from "./session.js";
import { bearerOf, FailedAttempts, originAllowed, ownerOf, sameSecret } from "./admission.js";

/** A half-open client is found within two of these (docs/protocol/aep.md §9.2). */
export const DEFAULT_HEARTBEAT_MS = 30_000;

/** Bound on one client frame; inputs are text, not uploads. */
export const MAX_FRAME_BYTES = 1024 * 1024;

export interface AepListenerOptions
  extends Omit<SessionDeps, "onForget" | "resolveWorkdir" | "checkWorkdir" | "homeFor"> {
  port: number;
  host: string;
  /** What clients must present (the gateway token, or aep.token). */
  token: string;
  /** Browser origins accepted (security.allowedOrigins); any other Origin is refused. */
  allowedOrigins?: readonly string[];
  /** Where sessions' workers run and live (aep/workdir.ts): aep.workdir and the data dir. */
  workdirs: WorkdirPolicy;
  limits?: QueueLimits;
  /** Live sessions kept in memory (default MAX_LIVE_SESSIONS). */
  maxLiveSessions?: number;
  /** WebSocket ping interval; a client that answers none within it is dropped (aep.heartbeatMs). */
  heartbeatMs?: number;
}

export interface AepListener {
  url: string;
  /** The live sessions (status page). */
  sessions(): AepSessionSummary[];
  close(): Promise<void>;
}

export async function startAepListener(o: AepListenerOptions): Promise<AepListener> {
  const failures = new FailedAttempts();
  const workdirFor = workdirResolver(o.workdirs);
  const sessionDeps = {
    ...o,
    resolveWorkdir: workdirFor,
    checkWorkdir: workdirChecker(o.workdirs),
    homeFor: (sessionId: string) => homeFor(o.workdirs.dataDir, sessionId),
  };
  const registry = new AepRegistry(o.store, sessionDeps, o.maxLiveSessions);
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  const server = createServer((_req, res) => {
    res.writeHead(404, { "content-type": "text/plain" }).end("AEP v1 lives at /ws (WebSocket)\n");
  });

  server.on("upgrade", (req: IncomingMessage, socket: NetSocket, head: Buffer) => {
    const address = req.socket.remoteAddress ?? "";
    const refusal = refuseUpgrade(req, o, failures, address);
    if (refusal) {
      socket.end(`HTTP/1.1 ${refusal}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) =>
      serveConnection(ws, {
        registry,
        token: o.token,
        authenticated: bearerOf(req) !== undefined,
        failures,
        address,
        workdirFor,
        log: o.log,
        limits: o.limits ?? DEFAULT_LIMITS,
        heartbeatMs: o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      }),
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  o.log.info("aep listener started", { host: o.host, port });
  return {
    url: `ws://${host}:${port}/ws`,
    sessions: () => registry.list(),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const ws of wss.clients) ws.close(1001, "gateway shutting down");
      await registry.close();
      server.closeAllConnections();
      for (const ws of wss.clients) ws.terminate();
      await closed;
      o.log.info("aep listener stopped");
    },
  };
}

/** An HTTP status line when the upgrade is refused before any WebSocket exists. */
function refuseUpgrade(
  req: IncomingMessage,
  o: AepListenerOptions,
  failures: FailedAttempts,
  address: string,
): string | undefined {
  if (new URL(req.url ?? "/", "http://x").pathname !== "/ws") return "404 Not Found";
  if (!originAllowed(req.headers.origin, o.allowedOrigins ?? [])) return "403 Forbidden";
  if (failures.blocked(address)) return "429 Too Many Requests";
  const bearer = bearerOf(req);
  if (bearer === undefined || sameSecret(bearer, o.token)) return undefined;
  failures.record(address);
  return "401 Unauthorized";
}

interface ConnectionDeps {
  registry: AepRegistry;
  failures: FailedAttempts;
  /** The client's address: failed token attempts are counted per address. */
  address: string;
  heartbeatMs: number;
  token: string;
  /** A valid Bearer came with the upgrade (a wrong one never gets this far). */
  authenticated: boolean;
  workdirFor(requested: string | undefined): Promise<string>;
  log: Logger;
  limits: QueueLimits;
}

function serveConnection(ws: WebSocket, d: ConnectionDeps): void {
  const connectionId = `conn_${randomUUID()}`;
  let session: AepSession | undefined;
  let open = true;
  // Before a session exists (and for pong) envelopes carry seq 0; afterwards the session's sequencer numbers them.
  const commit = (event: ServerEvent) =>
    session && event.type !== "pong" ? session.commit(event) : serverEnvelope(session?.sessionId ?? "", 0, event);
  const queue = new OutboundQueue(
    {
      get bufferedAmount() {
        return ws.bufferedAmount;
      },
      send: (text, done) => ws.send(text, done),
    },
    commit,
    d.limits,
  );
  const link = {
    bind: (s: AepSession) => {
      session = s;
    },
    offer: (event: ServerEvent) => queue.offer(event),
    replay: (text: string) => {
      if (queue.replay(text) === "overflow") link.reconnectRequired("replay too large; init again with last_seq");
    },
    close: (code: number, reason: string) => ws.close(code, reason),
    // Around the full queue: the client learns why, then re-attaches with its last seq and loses nothing.
    reconnectRequired: (message: string) => {
      const error = { type: "error" as const, data: { code: "RECONNECT_REQUIRED" as const, message } };
      ws.send(redact(JSON.stringify(serverEnvelope(session?.sessionId ?? "", 0, error))));
      ws.close(4008, "reconnect required");
    },
  };
  const sendError = (code: ErrorCode, message: string, cause: ErrorCause = {}) =>
    session
      ? session.sendError(code, message, cause)
      : queue.offer({ type: "error", data: { code, message, ...cause } });

  const attach = fromPromise(async ({ input }: { input: InitRequest }) => {
    if (!d.authenticated) {
      if (input.data.token === undefined)
        throw new AttachRefused(
          "AUTH_REQUIRED",
          "this endpoint needs the gateway token: Authorization: Bearer, or init data.token",
        );
      if (d.failures.blocked(d.address))
        throw new AttachRefused("RATE_LIMITED", "too many wrong tokens from this address; retry in a minute");
      if (!sameSecret(input.data.token, d.token)) {
        d.failures.record(d.address);
        throw new AttachRefused("UNAUTHORIZED", "wrong token");
      }
    }
    const workdir = () =>
      d.workdirFor(input.data.workdir).catch((err: unknown) => {
        throw new AttachRefused("INVALID_MESSAGE", (err as Error).message);
      });
    await d.registry.open(
      {
        ...(input.data.session_key ? { sessionKey: input.data.session_key } : {}),
        owner: ownerOf(d.token),
        ...(input.data.last_seq === undefined ? {} : { lastSeq: input.data.last_seq }),
        ...(input.data.worker ? { worker: input.data.worker } : {}),
        workdir,
      },
      link,
      () => open,
    );
  });

  const actor = createActor(
    aepConnectionMachine.provide({
      actors: { attach },
      actions: {
        pong: () => queue.offer({ type: "pong", data: {} }),
        sendError: (_, { code, message, cause }) => sendError(code, message, cause),
        close: (_, { reason }) => ws.close(1008, reason.slice(0, 120)),
        terminate: () => ws.terminate(),
        route: (_, { envelope }) => session?.handle(envelope),
        detach: () => {
          const unsent = queue.close();
          if (session) session.detach(link, unsent);
        },
      },
    }),
  );
  // An unexpected exception ends this connection with INTERNAL_ERROR and is logged with its ids; an exception thrown
  // from a socket listener would otherwise reach the process and end every session.
  const fail = (what: string, err: unknown) => {
    d.log.error(`aep ${what} failed`, { connection_id: connectionId, session_id: session?.sessionId, error: err });
    if (!open) return;
    try {
      sendError("INTERNAL_ERROR", "byok-gateway internal error; reconnect to go on (its log has the details)");
    } catch {
      // the session itself is what failed: the close below still tells the client
    }
    ws.close(1011, "internal error");
  };
  actor.subscribe({ error: (err) => fail("connection machine", err) });
  actor.start();

  ws.on("message", (data: RawData, isBinary: boolean) => {
    try {
      if (isBinary) return sendError("INVALID_MESSAGE", "AEP frames are JSON text");
      const decoded = decodeClientFrame(data.toString());
      if (!decoded.ok)
        return sendError(decoded.code, decoded.message, decoded.id ? { client_message_id: decoded.id } : {});
      actor.send({ type: "FRAME", envelope: decoded.envelope });
    } catch (err) {
      fail("frame", err);
    }
  });
  const heartbeat = watchHeartbeat(ws, d.heartbeatMs, () => actor.send({ type: "HEARTBEAT_MISSED" }));
  ws.on("close", () => {
    clearInterval(heartbeat);
    open = false;
    try {
      actor.send({ type: "SOCKET_CLOSED" });
    } catch (err) {
      fail("close", err);
    }
  });
  ws.on("error", (err) => d.log.warn("aep socket error", { error: err }));
}

/** Pings every `intervalMs`; a socket that answered none of the last interval's pings is reported once. */
function watchHeartbeat(ws: WebSocket, intervalMs: number, missed: () => void): NodeJS.Timeout {
  let answered = true;
  ws.on("pong", () => {
    answered = true;
  });
  const timer = setInterval(() => {
    if (!answered) {
      clearInterval(timer);
      return missed();
    }
    answered = false;
    ws.ping();
  }, intervalMs);
  timer.unref();
  return timer;
}
