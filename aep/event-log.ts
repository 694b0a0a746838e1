// A session's durable event log (docs/protocol/aep.md §9.3): every kept event is appended, in seq order, as the
// (redacted) text it is sent as; a client that re-attaches with `last_seq` is replayed what came after, in order,
// before live events. Appends are batched on one chain, and a replay takes its place on the same chain, so it reads
// everything committed before it began; what gets a seq during the read is handed over by the sequencer.
import { redact } from "../log/logger.js";
import type { Logger } from "../log/logger.js";
import type { AepStore, EventLogBounds, LoggedEvent } from "../store/index.js";
import type { ServerEnvelope } from "./wire/envelope.js";

/** Defaults of aep.eventLog: per session, the newest 8 MiB, none older than a day. */
export const DEFAULT_EVENT_LOG: EventLogBounds = { maxBytes: 8 * 1024 * 1024, maxAgeMs: 24 * 60 * 60_000 };
/** A replay sends at most this many events; a client that missed more re-attaches from the last one it got. */
export const MAX_REPLAY = 4096;
/** What a delta is logged as: its seq is kept (a replay knows it was missed), its text is not. */
const DELTA_MARKER = "delta";
/** The log is pruned to its bounds after this many appends (and after every replay). */
const PRUNE_EVERY = 256;

export interface Replay {
  /** Logged texts after the client's seq, in order. */
  texts: string[];
  /** The seq of the last one (the client's seq when none). */
  lastSeq: number;
  /** More than MAX_REPLAY were missed: the client must re-attach from `lastSeq`. */
  truncated: boolean;
}

export class SessionEventLog {
  private chain: Promise<void> = Promise.resolve();
  private pending: LoggedEvent[] = [];
  private sincePrune = 0;

  constructor(private readonly o: { sessionId: string; store: AepStore; bounds: EventLogBounds; log: Logger }) {}

  append(envelope: ServerEnvelope): void {
    const text = envelope.event.type === "message.delta" ? DELTA_MARKER : redact(JSON.stringify(envelope));
    this.pending.push({ seq: envelope.seq, envelope: text });
    if (this.pending.length === 1) this.enqueue(() => this.flush());
  }

  /** The session is being deleted: what waits to be written never will be. */
  discard(): void {
    this.pending = [];
  }

  /** Reads what came after `afterSeq` once everything appended so far is stored. */
  replayAfter(afterSeq: number): Promise<Replay> {
    return new Promise<Replay>((resolve, reject) =>
      this.enqueue(async () => {
        await this.flush();
        const rows = await this.o.store.eventsAfter(this.o.sessionId, afterSeq, MAX_REPLAY + 1);
        const sent = rows.slice(0, MAX_REPLAY);
        resolve({
          texts: replayable(sent),
          lastSeq: sent.at(-1)?.seq ?? afterSeq,
          truncated: rows.length > MAX_REPLAY,
        });
        await this.o.store.pruneEvents(this.o.sessionId, this.o.bounds);
      }, reject),
    );
  }

  /** Everything appended so far is stored (or its failure logged). */
  settled(): Promise<void> {
    return new Promise((resolve) => this.enqueue(() => this.flush(), undefined, resolve));
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    await this.o.store.appendEvents(this.o.sessionId, batch);
    this.sincePrune += batch.length;
    if (this.sincePrune < PRUNE_EVERY) return;
    this.sincePrune = 0;
    await this.o.store.pruneEvents(this.o.sessionId, this.o.bounds);
  }

  private enqueue(step: () => Promise<void>, onError?: (err: unknown) => void, onSettled?: () => void): void {
    this.chain = this.chain
      .then(step)
      .catch((err: unknown) => {
        this.o.log.error("aep event log write failed", { session_id: this.o.sessionId, error: err });
        onError?.(err);
      })
      .finally(onSettled);
  }
}

/**
 * The texts to send, in order: deltas are never replayed (their `message` follows), and a turn's `done` after
 * missed deltas says `dropped` — the client must render from `message` (docs/protocol/aep.md §6).
 */
function replayable(rows: readonly LoggedEvent[]): string[] {
  const texts: string[] = [];
  let missedDelta = false;
  for (const row of rows) {
    if (row.envelope === DELTA_MARKER) {
      missedDelta = true;
      continue;
    }
    if (missedDelta && row.envelope.includes('"type":"done"')) {
      const envelope = JSON.parse(row.envelope) as ServerEnvelope;
      if (envelope.event.type === "done") {
        envelope.event.data = { ...envelope.event.data, dropped: true };
        texts.push(JSON.stringify(envelope));
        missedDelta = false;
        continue;
      }
    }
    texts.push(row.envelope);
  }
  return texts;
}
