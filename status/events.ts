// The live event stream (docs/status-api.md §7): Server-Sent Events of run started / state changed / run ended, after
// a snapshot of the live runs. A client that cannot keep up is disconnected (its EventSource reconnects and gets a
// fresh snapshot) rather than buffered without bound.
import type { Context } from "koa";
import type { StatusEvent, StatusSource } from "./types.js";

/** Bytes a slow client may have waiting before it is dropped. */
const MAX_BUFFERED_BYTES = 256 * 1024;
/** A comment line this often keeps proxies and idle timers from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;
/** How soon a dropped EventSource reconnects. */
const RETRY_MS = 2_000;

export function serveEvents(ctx: Context, source: StatusSource): void {
  const res = ctx.res;
  const send = (event: StatusEvent | { type: "snapshot"; runs: ReturnType<StatusSource["liveRuns"]> }) => {
    if (res.writableLength > MAX_BUFFERED_BYTES) return void close();
    res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  };
  const unsubscribe = source.subscribe(send);
  if (!unsubscribe) {
    ctx.status = 503;
    ctx.body = { code: "unavailable", message: "too many status event streams are open" };
    return;
  }
  ctx.respond = false;
  ctx.req.socket.setTimeout(0);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
  res.write(`retry: ${RETRY_MS}\n\n`);
  send({ type: "snapshot", runs: source.liveRuns() });
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  let closed = false;
  function close(): void {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    unsubscribe?.();
    res.end();
  }
  res.on("close", close);
}
