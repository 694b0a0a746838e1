// A real HTTP server on 127.0.0.1 standing in for an LLM provider: it records every request and answers
// with scripted bytes (usually a recorded .sse fixture). Only the provider is faked; the adapter under test
// speaks real HTTP to it.
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The recorded provider streams (test/fixtures/providers/<endpoint>/*.sse, each folder with a PROVENANCE.md). */
export const FIXTURES_DIR = fileURLToPath(new URL("../fixtures/providers/", import.meta.url));

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface ScriptedResponse {
  /** Default 200. */
  status?: number;
  /** Default text/event-stream. */
  contentType?: string;
  /** Bytes to send after the headers. */
  body?: string | Uint8Array;
  /** Write the body in pieces of this many bytes, yielding between them, to exercise reassembly. */
  chunkSize?: number;
  /** After the body: "end" (default) finishes the response, "hang" keeps it open, "destroy" cuts the socket. */
  then?: "end" | "hang" | "destroy";
  /** Never send headers at all (the request waits forever). */
  neverRespond?: boolean;
}

export interface ReplayServer {
  /** e.g. http://127.0.0.1:41234/v1 — what an OpenAI-style endpoint's baseUrl looks like. */
  baseUrl: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export function readFixture(relativePath: string): Buffer {
  return readFileSync(join(FIXTURES_DIR, relativePath));
}

export function sseResponse(body: string | Uint8Array, options: Omit<ScriptedResponse, "body"> = {}): ScriptedResponse {
  return { ...options, body };
}

export async function startReplayServer(
  respond: (request: RecordedRequest) => ScriptedResponse,
): Promise<ReplayServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(parts).toString("utf8"),
      };
      requests.push(recorded);
      void answer(res, respond(recorded));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function answer(res: ServerResponse, script: ScriptedResponse): Promise<void> {
  if (script.neverRespond) return;
  res.writeHead(script.status ?? 200, { "content-type": script.contentType ?? "text/event-stream" });
  res.flushHeaders();
  const body = typeof script.body === "string" ? Buffer.from(script.body, "utf8") : Buffer.from(script.body ?? []);
  const size = script.chunkSize ?? Math.max(body.length, 1);
  for (let offset = 0; offset < body.length; offset += size) {
    if (res.destroyed) return;
    res.write(body.subarray(offset, offset + size));
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (script.then === "hang") return;
  if (script.then === "destroy") res.socket?.destroy();
  else res.end();
}
