// A TCP pass-through for end-to-end tests that must see the gateway's provider connections: it forwards every
// connection to a target port (a fake provider), records which connection last carried bytes from the gateway, and
// notices when a connection closes, which the fake providers do not report (used by endings.test.ts).
import { connect, createServer, type Server, type Socket } from "node:net";

export interface WatchedConnection {
  lastClientDataAt: number;
  closed: boolean;
}

export interface ConnectionWatch {
  url: string;
  /** The connection that most recently carried bytes from the gateway (the request in flight). */
  lastActive(): WatchedConnection;
  close(): Promise<void>;
}

/**
 * A TCP pass-through in front of the fake provider so a test can see when the gateway closes its provider
 * connection (the fake does not report socket closes).
 */
export async function watchConnections(targetPort: number): Promise<ConnectionWatch> {
  const connections: WatchedConnection[] = [];
  const sockets = new Set<Socket>();
  let tick = 0;
  const server: Server = createServer((downstream) => {
    const watched: WatchedConnection = { lastClientDataAt: 0, closed: false };
    connections.push(watched);
    const upstream = connect(targetPort, "127.0.0.1");
    for (const s of [downstream, upstream]) sockets.add(s);
    downstream.on("data", (chunk: Buffer) => {
      watched.lastClientDataAt = ++tick;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => downstream.write(chunk));
    const closeBoth = (): void => {
      watched.closed = true;
      downstream.destroy();
      upstream.destroy();
    };
    downstream.on("close", closeBoth);
    upstream.on("close", closeBoth);
    downstream.on("error", closeBoth);
    upstream.on("error", closeBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    lastActive: () => connections.reduce((a, b) => (b.lastClientDataAt > a.lastClientDataAt ? b : a)),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
