// The AEP v1 WebSocket endpoint: its own HTTP server, upgrades only at /ws. Loopback by default; a non-loopback bind
// needs aep.token, presented as `Authorization: Bearer` or as init data.token. A request without Origin (SDKs,
// scripts) is allowed; a browser Origin only when it is itself loopback or a token guards the endpoint, so a web
// page cannot drive a local worker.
import { createServer, type IncomingMessage } from "node:http";
import { randomUUID, timingSafeEqual } from "node:crypto";
import type { AddressInfo, Socket as NetSocket } from "node:net";
import { createActor, fromPromise } from "xstate";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import type { Logger } from "../log/logger.js";
import { AttachRefused, aepConnectionMachine, type InitRequest } from "../machines/aep-connection.js";
import { DEFAULT_LIMITS, OutboundQueue, type QueueLimits } from "./wire/backpressure.js";
import { decodeClientFrame, serverEnvelope, type ErrorCode, type ServerEvent } from "./wire/envelope.js";
import { AepRegistry } from "./registry.js";
import type { AepSession, SessionDeps } from "./session.js";
import { isLoopbackHost } from "../transport/gate.js";

/** Bound on one client frame; inputs are text, not uploads. */
export const MAX_FRAME_BYTES = 1024 * 1024;

export interface AepListenerOptions extends Omit<SessionDeps, "onForget" | "resolveWorkdir"> {
  port: number;
  host: string;
  token?: string;
  /** Resolves the working directory of a new session (client choice or default). */
  workdirFor(requested: string | undefined): Promise<string>;
  limits?: QueueLimits;
  /** Live sessions kept in memory (default MAX_LIVE_SESSIONS). */
  maxLiveSessions?: number;
}

export interface AepListener {
  url: string;
  close(): Promise<void>;
}

export async function startAepListener(o: AepListenerOptions): Promise<AepListener> {
  if (!isLoopbackHost(o.host) && !o.token)
    throw new Error(`aep.host ${o.host} is not a loopback address: aep.token is required`);
  const registry = new AepRegistry(o.store, { ...o, resolveWorkdir: (w) => o.workdirFor(w) }, o.maxLiveSessions);
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  const server = createServer((_req, res) => {
    res.writeHead(404, { "content-type": "text/plain" }).end("AEP v1 lives at /ws (WebSocket)\n");
  });

  server.on("upgrade", (req: IncomingMessage, socket: NetSocket, head: Buffer) => {
    const refusal = refuseUpgrade(req, o.token);
    if (refusal) {
      socket.end(`HTTP/1.1 ${refusal}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const bearer = bearerOf(req);
    wss.handleUpgrade(req, socket, head, (ws) =>
      serveConnection(ws, {
        registry,
        token: o.token,
        authenticated: !o.token || bearer !== undefined,
        workdirFor: o.workdirFor,
        log: o.log,
        limits: o.limits ?? DEFAULT_LIMITS,
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
function refuseUpgrade(req: IncomingMessage, token: string | undefined): string | undefined {
  if (new URL(req.url ?? "/", "http://x").pathname !== "/ws") return "404 Not Found";
  const bearer = bearerOf(req);
  if (token && bearer !== undefined && !sameSecret(bearer, token)) return "401 Unauthorized";
  const origin = req.headers.origin;
  if (origin !== undefined && !token && !isLoopbackOrigin(origin)) return "403 Forbidden";
  return undefined;
}

function bearerOf(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "");
  return match?.[1]?.trim();
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    return isLoopbackHost(new URL(origin).hostname);
  } catch {
    return false;
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface ConnectionDeps {
  registry: AepRegistry;
  token: string | undefined;
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
    close: (code: number, reason: string) => ws.close(code, reason),
  };
  const sendError = (code: ErrorCode, message: string) =>
    session ? session.sendError(code, message) : queue.offer({ type: "error", data: { code, message } });

  const attach = fromPromise(async ({ input }: { input: InitRequest }) => {
    if (!d.authenticated) {
      if (input.data.token === undefined)
        throw new AttachRefused(
          "AUTH_REQUIRED",
          "this endpoint needs a token: Authorization: Bearer, or init data.token",
        );
      if (!sameSecret(input.data.token, d.token!)) throw new AttachRefused("UNAUTHORIZED", "wrong token");
    }
    const workdir = () =>
      d.workdirFor(input.data.workdir).catch((err: unknown) => {
        throw new AttachRefused("INVALID_MESSAGE", (err as Error).message);
      });
    await d.registry.open(
      {
        ...(input.data.session_key ? { sessionKey: input.data.session_key } : {}),
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
        sendError: (_, { code, message }) => sendError(code, message),
        close: (_, { reason }) => ws.close(1008, reason.slice(0, 120)),
        route: (_, { envelope }) => session?.handle(envelope),
        detach: () => {
          if (session) session.detach(link);
          queue.close();
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
      if (!decoded.ok) return sendError(decoded.code, decoded.message);
      actor.send({ type: "FRAME", envelope: decoded.envelope });
    } catch (err) {
      fail("frame", err);
    }
  });
  ws.on("close", () => {
    open = false;
    try {
      actor.send({ type: "SOCKET_CLOSED" });
    } catch (err) {
      fail("close", err);
    }
  });
  ws.on("error", (err) => d.log.warn("aep socket error", { error: err }));
}
