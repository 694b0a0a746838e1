// The relay's HTTP/2 leg (docs/protocol/cursor-transport.md §8.3): a call that reached the gateway over HTTP/2 goes
// to the upstream over HTTP/2 too, so full-duplex calls (the `Run` bidi stream and Cursor's other streaming RPCs)
// keep streaming both ways and their response trailers arrive. One client session per upstream origin, reused by
// every call, closed when idle and at shutdown.
import {
  connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from "node:http2";

/** A session with no stream for this long is closed; the next call opens a new one. */
const IDLE_MS = 60_000;

export class Http2Upstream {
  private session: ClientHttp2Session | undefined;

  constructor(private readonly origin: URL) {}

  /** Opens one call on the shared session; `headers` are end-to-end headers, the pseudo-headers are added here. */
  request(method: string, path: string, headers: OutgoingHttpHeaders): ClientHttp2Stream {
    return this.current().request({
      ...headers,
      [constants.HTTP2_HEADER_METHOD]: method,
      [constants.HTTP2_HEADER_PATH]: path,
      [constants.HTTP2_HEADER_SCHEME]: this.origin.protocol.slice(0, -1),
      [constants.HTTP2_HEADER_AUTHORITY]: this.origin.host,
    });
  }

  /** Shutdown: calls still open finish, no new one starts on this session. */
  close(): void {
    this.session?.close();
    this.session = undefined;
  }

  private current(): ClientHttp2Session {
    const live = this.session;
    if (live && !live.closed && !live.destroyed) return live;
    // https: ALPN h2; http: prior knowledge (h2c), as the gateway's own port accepts it.
    const session = connect(this.origin.origin);
    session.setTimeout(IDLE_MS, () => session.close());
    // A session failure reaches every open call as its own stream error; the session itself is then dropped.
    session.on("error", () => {});
    session.once("close", () => {
      if (this.session === session) this.session = undefined;
    });
    session.unref();
    this.session = session;
    return session;
  }
}

/** The flat header list of an incoming call as an HTTP/2 header object (repeated names become arrays). */
export function headerObject(raw: string[]): OutgoingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    const seen = headers[name];
    headers[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return headers;
}

/** An upstream response or trailer block as a flat header list, for the same hop-by-hop filter as HTTP/1.1. */
export function rawHeaders(headers: IncomingHttpHeaders): string[] {
  const raw: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) raw.push(name, String(v));
  }
  return raw;
}
