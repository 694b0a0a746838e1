// When the store sweeps unreachable blobs (docs/protocol/cursor-run.md §6.6): once shortly after start and then every
// few hours, off the request path. Blobs younger than the retention stay, whatever their reachability: they may belong
// to a run in flight.
import type { Store } from "../store/index.js";
import type { Logger } from "../log/logger.js";

export interface BlobGcSchedule {
  /** Stops the timer and waits for a sweep in progress, so the store can close under none. */
  stop(): Promise<void>;
}

export interface BlobGcOptions {
  /** Called after a sweep that deleted blobs (the history cache vouches for stored roots and must forget them). */
  onDeleted?: () => void;
  /**
   * False while runs are live: a sweep then waits `retryMs`. A live run may reuse an old unreachable blob without
   * writing it again (it was stored already), and its checkpoint must still find it.
   */
  idle?: () => boolean;
  retryMs?: number;
  retentionMs?: number;
  firstAfterMs?: number;
  everyMs?: number;
}

const DAY = 24 * 3_600_000;

export function scheduleBlobGc(store: Store, log: Logger, o: BlobGcOptions = {}): BlobGcSchedule {
  const retentionMs = o.retentionMs ?? 7 * DAY;
  let running: Promise<void> = Promise.resolve();
  let retry: NodeJS.Timeout | undefined;
  const sweep = () => {
    clearTimeout(retry);
    if (o.idle && !o.idle()) {
      retry = setTimeout(sweep, o.retryMs ?? 60_000).unref();
      return;
    }
    running = store.collectBlobs(Date.now() - retentionMs).then(
      (r) => {
        if (r.deletedBlobs === 0) return;
        o.onDeleted?.();
        log.info("unreachable blobs collected", { blobs: r.deletedBlobs, bytes: r.deletedBytes });
      },
      (e: unknown) => log.error("blob garbage collection failed", { error: String(e) }),
    );
  };
  const first = setTimeout(sweep, o.firstAfterMs ?? 60_000).unref();
  const every = setInterval(sweep, o.everyMs ?? 6 * 3_600_000).unref();
  return {
    stop: async () => {
      clearTimeout(first);
      clearTimeout(retry);
      clearInterval(every);
      await running;
    },
  };
}
