// Coalesces the text and thinking deltas a provider read decodes into one ModelEvent (issue 6 follow-up): a fast
// provider packs dozens of deltas into one network read, and each delta would otherwise cost one ModelCall event,
// one RequestStream event and one frame. Cursor renders text_delta and thinking_delta additively, so consecutive
// deltas of one kind concatenated are wire-equivalent; any other event (a block boundary, a tool call, usage, done)
// flushes first, so kinds are never reordered and nothing is merged across them.
import type { ModelEvent } from "../providers/types.js";

type Delta = Extract<ModelEvent, { type: "text_delta" | "thinking_delta" }>;

export interface DeltaCoalescer {
  push(event: ModelEvent): void;
  /** Sends the delta still held, if any (before the stream's end or failure is reported). */
  flush(): void;
  /** Forgets the delta still held: the pass was stopped. */
  drop(): void;
}

/**
 * Holds a delta until the current event-loop turn has decoded everything it read (the flush runs in
 * setImmediate, after the microtasks that decode one read), then sends it as one event.
 */
export function coalesceDeltas(send: (event: ModelEvent) => void): DeltaCoalescer {
  let held: { type: Delta["type"]; delta: string } | undefined;
  let timer: NodeJS.Immediate | undefined;
  const flush = () => {
    if (timer !== undefined) clearImmediate(timer);
    timer = undefined;
    if (!held) return;
    const event = held;
    held = undefined;
    send(event);
  };
  return {
    push(event) {
      if (event.type === "text_delta" || event.type === "thinking_delta") {
        if (held?.type === event.type) {
          held.delta += event.delta;
          return;
        }
        flush();
        held = { type: event.type, delta: event.delta };
        timer = setImmediate(flush);
        return;
      }
      flush();
      send(event);
    },
    flush,
    drop() {
      if (timer !== undefined) clearImmediate(timer);
      timer = undefined;
      held = undefined;
    },
  };
}
