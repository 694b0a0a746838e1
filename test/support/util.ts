// Small helpers shared by the test fakes.
import { createServer, type IncomingMessage, type RequestListener } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` until it holds; rejects with `describe()` after the timeout so failures say what was missing. */
export async function waitUntil(condition: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() >= deadline) throw new Error(describe());
    await sleep(10);
  }
}

/** A recorded fixture under test/fixtures/ (each folder says in its README where the recordings come from). */
export function fixturePath(relativePath: string): string {
  return join(fileURLToPath(new URL("../fixtures/", import.meta.url)), relativePath);
}

export interface LoopbackServer {
  port: number;
  /** Closes the server and destroys every open connection (hanging streams and keep-alive sockets included). */
  close(): Promise<void>;
}

/** An HTTP server for a fake on 127.0.0.1 and a free port. */
export async function listenOnLoopback(handler: RequestListener): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  const server = createServer(handler);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
