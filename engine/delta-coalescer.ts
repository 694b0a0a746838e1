// Coalesces the text and thinking deltas a provider read decodes into few ModelEvents (issue 6 follow-up): a fast
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
 * The first delta of an event-loop turn goes out at once: a paced model (one delta per read) and the first token
 * never wait for a timer (issue 17). The deltas decoded after it in the same turn are held and concatenated until
 * that turn's decoding is done (setImmediate, after the microtasks that decode one read), then sent as one event.
 */
export function coalesceDeltas(send: (event: ModelEvent) => void): DeltaCoalescer {
  let held: { type: Delta["type"]; delta: string } | undefined;
  /** Set while the current turn already sent a delta; cleared (and the held delta sent) by the immediate. */
  let turn: NodeJS.Immediate | undefined;
  const flush = () => {
    if (!held) return;
    const event = held;
    held = undefined;
    send(event);
  };
  const endTurn = () => {
    turn = undefined;
    flush();
  };
  return {
    push(event) {
      if (event.type !== "text_delta" && event.type !== "thinking_delta") {
        flush();
        send(event);
        return;
      }
      if (turn === undefined) {
        turn = setImmediate(endTurn);
        send(event);
      } else if (held?.type === event.type) {
        held.delta += event.delta;
      } else {
        flush();
        held = { type: event.type, delta: event.delta };
      }
    },
    flush,
    drop() {
      if (turn !== undefined) clearImmediate(turn);
      turn = undefined;
      held = undefined;
    },
  };
}
