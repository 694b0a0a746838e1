// Meters every model call of every front door (docs/status-api.md §4). The provider adapters are wrapped so each usage
// report a call makes is added, in memory, to its (front door, model, UTC day) totals; the totals reach the store
// without an fsync of their own: inside the next checkpoint commit of a Cursor run, or — when no run is live (a
// failed run's calls, the Anthropic Messages door) — on a timer, and before the status API reads them.
import type { Logger } from "../log/logger.js";
import type { ProviderAdapter, ProviderEndpoint, Usage } from "../providers/types.js";
import { type Store, type UsageRecord, type UsageTotals, usageDay } from "../store/index.js";

type AdapterFactory = (endpoint: ProviderEndpoint) => ProviderAdapter;

/** Totals waiting in memory at most: beyond it they are written at once. */
const MAX_PENDING_ROWS = 500;
/** How often totals that no run's terminal commit took are written, when no run is live. */
const FLUSH_EVERY_MS = 30_000;

export class UsageLedger {
  private pending = new Map<string, UsageTotals>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Pick<Store, "addUsage">,
    private readonly log: Logger,
    /** No Cursor run is live: a write now costs a commit no run would have made anyway. */
    idle: () => boolean,
  ) {
    this.timer = setInterval(() => idle() && void this.flush(), FLUSH_EVERY_MS).unref();
  }

  /** One model call's usage, from any front door. */
  recordUsage(r: UsageRecord): void {
    this.add({ ...r, calls: 1 });
    if (this.pending.size >= MAX_PENDING_ROWS) void this.flush();
  }

  /** Writes what is pending in one commit; a failed write keeps the totals for the next one. */
  async flush(): Promise<void> {
    const rows = this.take();
    if (rows.length === 0) return;
    await this.store.addUsage(rows).catch((e: unknown) => this.keep(rows, e));
  }

  /**
   * The store as the agent service uses it: each checkpoint commit carries the pending totals along, so metering adds
   * no commit to a run (test/e2e/store-commits.test.ts). A run's checkpoints complete before it goes on, so the
   * totals of a finished turn are in the store before its EndStream.
   */
  ridingOnCheckpoints<S extends Pick<Store, "commitCheckpoint">>(store: S): S {
    return {
      ...store,
      commitCheckpoint: async (commit) => {
        const usage = this.take();
        return store.commitCheckpoint({ ...commit, usage }).catch((e: unknown) => {
          this.keep(usage, e);
          throw e;
        });
      },
    };
  }

  /** Shutdown: the last totals are written before the store closes. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private take(): UsageTotals[] {
    const rows = [...this.pending.values()];
    this.pending = new Map();
    return rows;
  }

  private keep(rows: UsageTotals[], error: unknown): void {
    this.log.warn("usage not written yet", { rows: rows.length, error: String(error) });
    for (const r of rows) this.add(r);
  }

  private add(r: UsageTotals): void {
    const key = JSON.stringify([r.frontDoor, r.model, r.day]);
    const t = this.pending.get(key);
    this.pending.set(
      key,
      t
        ? {
            ...t,
            calls: t.calls + r.calls,
            input: t.input + r.input,
            output: t.output + r.output,
            cacheRead: t.cacheRead + r.cacheRead,
            cacheWrite: t.cacheWrite + r.cacheWrite,
          }
        : r,
    );
  }
}

/** One front door's usage reports (under the provider's model name), added to the ledger as they arrive. */
export function usageSink(ledger: UsageLedger, frontDoor: string): (model: string, usage: Usage) => void {
  return (model, { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens }) =>
    ledger.recordUsage({
      frontDoor,
      model,
      day: usageDay(new Date()),
      input: inputTokens ?? 0,
      output: outputTokens ?? 0,
      cacheRead: cacheReadTokens ?? 0,
      cacheWrite: cacheWriteTokens ?? 0,
    });
}

/** The adapter factory of one front door, with every usage report going to `record` as it arrives. */
export function meteredAdapters(
  adapterFor: AdapterFactory,
  record: (model: string, usage: Usage) => void,
): AdapterFactory {
  return (endpoint) => {
    const adapter = adapterFor(endpoint);
    return {
      stream: (request, signal, sink) =>
        adapter.stream(request, signal, (event) => {
          if (event.type === "usage") record(request.model, event.usage);
          sink(event);
        }),
    };
  };
}
