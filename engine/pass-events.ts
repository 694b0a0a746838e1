// How one provider pass's events reach the ModelCall and the client (issue 6 follow-up, issue 17). A paced model sends
// one delta per network read, and a machine macrostep per delta was the largest single cost of a streaming run, so:
//
// - The deltas of an open text block are the text lane: shown to the client here, as they arrive, and handed to the
//   ModelCall as one TEXT event (the block's text) just before the next other event, text_end included. The machine
//   holds the text from then on; a pass that fails or is stopped mid-block records nothing, so nothing is lost.
// - Thinking deltas reach the ModelCall as MODEL events (it times the thinking segment), merged per read.
// - Everything else is sent as it comes, after whatever is held, so kinds are never reordered.
//
// Shown text leaves at once while the other events queue in the ModelCall's mailbox; they keep their order because
// every read is delivered from its own I/O callback, when the ModelCall is idle (a call's first event follows its
// response head, never the actor's start).
//
// Within one read the first delta goes out at once (the first token never waits); the rest are merged until that
// read's decoding is done, then sent as one frame or event. Cursor renders text and thinking deltas additively, so
// merged deltas are wire-equivalent.
import type { ModelCallEvent } from "../machines/model-call.js";
import type { ModelEvent } from "../providers/types.js";

export interface PassEvents {
  push(event: ModelEvent): void;
  /** Sends whatever is still held (before the stream's end or failure is reported). */
  flush(): void;
  /** Forgets whatever is held: the pass was stopped. */
  drop(): void;
}

export interface PassOutputs {
  send(event: ModelCallEvent): void;
  /** Shows text to the client (a text_delta); absent for a pass that shows nothing (a summary). */
  show?: (text: string) => void;
}

export function passEvents({ send, show }: PassOutputs): PassEvents {
  /** A text block is open (as the events sent so far say). */
  let textOpen = false;
  /** The open block's text not yet handed to the ModelCall. */
  let blockText = "";
  /** Deltas of the current read held for one frame (text) or one event (thinking). */
  let heldText = "";
  let heldThinking = "";
  /** A delta already went out in the current read; cleared (and the held ones sent) once its decoding is done. */
  let inRead = false;
  let dropped = false;

  const sendThinking = (delta: string) => send({ type: "MODEL", event: { type: "thinking_delta", delta } });
  const sendHeld = () => {
    if (heldText) show?.(heldText);
    if (heldThinking) sendThinking(heldThinking);
    heldText = heldThinking = "";
  };
  // process.nextTick from inside the read's promise chain runs once that chain has drained: after the read's last
  // event, without the event-loop turn a timer or setImmediate costs per delta.
  const endRead = () => {
    inRead = false;
    if (!dropped) sendHeld();
  };
  const firstOfRead = () => {
    if (inRead) return false;
    inRead = true;
    process.nextTick(endRead);
    return true;
  };
  const flush = () => {
    sendHeld();
    if (blockText) send({ type: "TEXT", text: blockText });
    blockText = "";
  };

  return {
    push(event) {
      if (dropped) return;
      if (event.type === "text_delta" && textOpen) {
        blockText += event.delta;
        if (firstOfRead()) show?.(event.delta);
        else heldText += event.delta;
        return;
      }
      if (event.type === "thinking_delta" && !textOpen) {
        if (firstOfRead()) sendThinking(event.delta);
        else heldThinking += event.delta;
        return;
      }
      flush();
      if (event.type === "text_start") textOpen = true;
      if (event.type === "text_end") textOpen = false;
      send({ type: "MODEL", event });
    },
    flush,
    drop() {
      dropped = true;
      heldText = heldThinking = blockText = "";
    },
  };
}
