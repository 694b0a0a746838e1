// A stand-in for Cursor's real backend (the relay target): records every request and answers scripted responses.
// Like the real one it speaks HTTP/1.1 and HTTP/2 (here cleartext, prior knowledge) on one port.
import type { IncomingHttpHeaders, RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import { createDualServer } from "../../transport/listener.js";
import { readBody, sleep, waitUntil } from "./util.js";

export interface UpstreamRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** "1.1" or "2.0". */
  httpVersion: string;
}

export interface UpstreamResponse {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Written one after another, each after its delay; lets relay tests check that streaming is not buffered. */
  chunks?: Array<{ data: string | Uint8Array; delayMs?: number }>;
  /** Response trailers (HTTP/2 calls). */
  trailers?: Record<string, string>;
}

export interface FakeUpstream {
  url: string;
  requests: UpstreamRequest[];
  /** Answers the next request; when the queue is empty the default answer is used. */
  enqueue(...responses: UpstreamResponse[]): void;
  /** The answer when the queue is empty: one response, or one chosen per request (e.g. by path). */
  setDefault(response: UpstreamResponse | ((req: UpstreamRequest) => UpstreamResponse)): void;
  waitForRequests(count: number, timeoutMs?: number): Promise<UpstreamRequest[]>;
  close(): Promise<void>;
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: UpstreamRequest[] = [];
  const queue: UpstreamResponse[] = [];
  // Loud by default: a relay test that forgot to script the upstream sees which request was not expected.
  let fallback: (req: UpstreamRequest) => UpstreamResponse = (req) => ({
    status: 599,
    headers: { "content-type": "text/plain" },
    body: `fake-upstream: nothing scripted for ${req.method} ${req.url}`,
  });

  const handler: RequestListener = async (req, res) => {
    const recorded: UpstreamRequest = {
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body: await readBody(req),
      httpVersion: req.httpVersion,
    };
    requests.push(recorded);
    const answer = queue.shift() ?? fallback(recorded);
    res.writeHead(answer.status ?? 200, answer.headers ?? {});
    if (answer.chunks) {
      res.flushHeaders();
      for (const chunk of answer.chunks) {
        if (chunk.delayMs) await sleep(chunk.delayMs);
        if (res.destroyed) return;
        res.write(chunk.data);
      }
    }
    if (answer.trailers) res.addTrailers(answer.trailers);
    res.end(answer.body ?? "");
  };
  const dual = createDualServer(handler);
  await new Promise<void>((resolve) => dual.server.listen(0, "127.0.0.1", resolve));
  const { port } = dual.server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...responses) => void queue.push(...responses),
    setDefault: (response) => {
      fallback = typeof response === "function" ? response : () => response;
    },
    waitForRequests: (count, timeoutMs = 10_000) =>
      waitUntil(
        () => requests.length >= count,
        timeoutMs,
        () => `fake-upstream: expected ${count} requests, got ${requests.length}`,
      ).then(() => requests.slice(0, count)),
    close: async () => {
      const closed = dual.close();
      dual.closeAllConnections();
      await closed;
    },
  };
}
