// One port for both HTTP/1.1 and HTTP/2. Cleartext: Connect clients may use either (h2c with prior knowledge), and
// without TLS there is no ALPN to choose, so the first bytes of a connection tell them apart — every HTTP/2
// connection opens with the "PRI * HTTP/2.0" preface, which no HTTP/1.1 method starts with. With a certificate
// (Cursor reaches its agent host over HTTPS), ALPN offers h2 and http/1.1 on the same port.
import { createServer as createHttp1Server, type RequestListener } from "node:http";
import { createSecureServer, createServer as createHttp2Server } from "node:http2";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { Duplex } from "node:stream";

export interface DualServer {
  server: Server;
  /** Stop accepting, then end every open connection of both protocols. */
  close(): Promise<void>;
  /** End connections now (after the gateway finished its own orderly shutdown). */
  closeAllConnections(): void;
}

const PREFACE_START = "PRI";

/** PEM certificate chain and private key. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

export function createDualServer(listener: RequestListener, tls?: TlsMaterial): DualServer {
  if (tls) return createTlsServer(listener, tls);
  const http1 = createHttp1Server(listener);
  const http2 = createHttp2Server(listener as unknown as Parameters<typeof createHttp2Server>[0]);
  // The sockets under the h2c sessions. Ending a session is done by destroying its socket: the session then closes
  // without writing a GOAWAY, which over the replaying stream below can trip an assertion inside Node.
  const h2Sockets = new Set<Socket>();
  // http.createServer turns Nagle off by default; a bare net.Server does not, and with it every small frame or
  // response written after its headers waited for the peer's delayed ACK (~40 ms on loopback).
  const server = createNetServer({ noDelay: true }, (socket) => route(socket, http1, http2, h2Sockets));
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    closeAllConnections() {
      http1.closeAllConnections();
      for (const socket of h2Sockets) socket.destroy();
    },
  };
}

function createTlsServer(listener: RequestListener, tls: TlsMaterial): DualServer {
  const server = createSecureServer(
    { ...tls, allowHTTP1: true, ALPNProtocols: ["h2", "http/1.1"] },
    listener as unknown as Parameters<typeof createSecureServer>[1],
  );
  const sockets = new Set<Socket>();
  server.on("secureConnection", (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    closeAllConnections() {
      for (const socket of sockets) socket.destroy();
    },
  };
}

function route(
  socket: Socket,
  http1: ReturnType<typeof createHttp1Server>,
  http2: ReturnType<typeof createHttp2Server>,
  h2Sockets: Set<Socket>,
): void {
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    if (head.length < PREFACE_START.length && PREFACE_START.startsWith(head.toString("latin1"))) return;
    socket.off("data", onData);
    if (head.toString("latin1", 0, PREFACE_START.length) === PREFACE_START) {
      h2Sockets.add(socket);
      socket.once("close", () => h2Sockets.delete(socket));
      http2.emit("connection", replaying(socket, head));
      return;
    }
    socket.pause();
    socket.unshift(head);
    http1.emit("connection", socket);
    socket.resume();
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}

/**
 * The HTTP/2 session reads the socket's native handle directly, so bytes already read cannot be unshifted back;
 * a stream that replays them and then follows the socket is handed over instead.
 */
function replaying(socket: Socket, head: Buffer): Duplex {
  const stream = new Duplex({
    read: () => socket.resume(),
    // Done as soon as the socket takes the bytes (or once it drains): the HTTP/2 session must never find a write
    // of ours still pending when it writes its own GOAWAY on close (Node asserts on that in JSStreamSocket).
    write: (chunk: Buffer, _encoding, callback) => {
      if (socket.destroyed || socket.write(chunk)) return callback();
      const done = () => {
        socket.off("drain", done);
        socket.off("close", done);
        callback();
      };
      socket.once("drain", done);
      socket.once("close", done);
    },
    final: (callback) => socket.end(callback),
    destroy: (err, callback) => {
      socket.destroy(err ?? undefined);
      callback(err);
    },
  });
  stream.push(head);
  socket.on("data", (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.once("end", () => stream.push(null));
  socket.once("close", () => stream.destroy());
  return stream;
}
