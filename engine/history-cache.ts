// Decoded checkpoint histories, per conversation (issue 6 follow-up): every run used to re-read and re-decode every
// root blob its checkpoint names, so a turn's CPU grew with the conversation. Root blobs are content-addressed, so a
// root id always decodes to the same message: a run reuses the decoded prefix its checkpoint shares with the last
// history loaded for the conversation and reads only the rest. A different checkpoint (another branch, an edited
// history) simply shares a shorter prefix; nothing is ever served for an id it was not decoded from.
//
// Bounded: least recently used conversations are dropped past a total of root bytes. The cache also vouches that its
// roots are in the store (the run skips asking for them), so blob garbage collection clears it whenever it deletes.
import type { CanonicalMessage } from "../providers/messages.js";

interface Entry {
  /** Root blob ids (hex), the system prompt's first, as the checkpoint listed them. */
  rootIds: readonly string[];
  /** The decoded message of each root, same order. */
  messages: readonly CanonicalMessage[];
  /** The size of each root blob, same order. */
  sizes: readonly number[];
  bytes: number;
}

/** A decoded run of roots: their messages and their blob sizes, in checkpoint order. */
export interface DecodedRoots {
  messages: readonly CanonicalMessage[];
  sizes: readonly number[];
}

export const HISTORY_CACHE_BYTES = 64 * 1024 * 1024;

export class HistoryCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly maxBytes = HISTORY_CACHE_BYTES) {}

  /** The decoded messages of the longest prefix of `rootIds` this conversation's last history shares. */
  prefix(conversationId: string, rootIds: readonly string[]): DecodedRoots {
    const entry = this.entries.get(conversationId);
    if (!entry) return { messages: [], sizes: [] };
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(conversationId);
    this.entries.set(conversationId, entry);
    let n = 0;
    const max = Math.min(rootIds.length, entry.rootIds.length);
    while (n < max && rootIds[n] === entry.rootIds[n]) n++;
    return { messages: entry.messages.slice(0, n), sizes: entry.sizes.slice(0, n) };
  }

  /** The history a run loaded (every root of its checkpoint, decoded) replaces the conversation's entry. */
  remember(conversationId: string, rootIds: readonly string[], roots: DecodedRoots): void {
    this.forget(conversationId);
    // An empty history (a new conversation's first run) has nothing to reuse, and a zero-byte entry would never be
    // evicted by the byte bound: one per conversation ever started.
    if (rootIds.length === 0) return;
    const bytes = roots.sizes.reduce((a, b) => a + b, 0);
    if (bytes > this.maxBytes) return;
    this.entries.set(conversationId, { rootIds, messages: roots.messages, sizes: roots.sizes, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  /** How many conversations have a history held (diagnostics and tests). */
  get conversations(): number {
    return this.entries.size;
  }

  /** Blobs were deleted: no cached root may be assumed stored any more. */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private forget(conversationId: string): void {
    const entry = this.entries.get(conversationId);
    if (!entry) return;
    this.entries.delete(conversationId);
    this.bytes -= entry.bytes;
  }
}
