// Raw HTTP for the e2e tests that must see the bytes: node:http on purpose, since fetch hides hop-by-hop headers
// and decompresses bodies.
import { request, type IncomingHttpHeaders } from "node:http";
import { createServer } from "node:net";
import { bidiAppendPath } from "../support/connect-wire.js";

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export function httpCall(
  url: string,
  opts: { method: string; headers?: Record<string, string>; body?: Uint8Array[] },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method, headers: opts.headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    for (const part of opts.body ?? []) req.write(part);
    req.end();
  });
}

export function postAppend(
  baseUrl: string,
  body: Uint8Array | string,
  contentType = "application/proto",
): Promise<RawResponse> {
  return httpCall(new URL(bidiAppendPath, baseUrl).href, {
    method: "POST",
    headers: { "content-type": contentType, "connect-protocol-version": "1" },
    body: [typeof body === "string" ? Buffer.from(body) : body],
  });
}

export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
