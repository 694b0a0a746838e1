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
// Within one read the first delta goes out at once (the first token never waits); the rest of the read is handled a
// microtask later, its deltas merged into one frame or event. Cursor renders text and thinking deltas additively, so
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
  /** A text block is open (as the events handled so far say). */
  let textOpen = false;
  /** The open block's text not yet handed to the ModelCall. */
  let blockText = "";
  /** Deltas of the current read held for one frame (text) or one event (thinking). */
  let heldText = "";
  let heldThinking = "";
  /** Set once the current read's first delta went out: the rest of that read, queued until `resume`. */
  let rest: ModelEvent[] | undefined;
  let dropped = false;

  const sendThinking = (delta: string) => send({ type: "MODEL", event: { type: "thinking_delta", delta } });
  const sendHeld = () => {
    if (heldText) show?.(heldText);
    if (heldThinking) sendThinking(heldThinking);
    heldText = heldThinking = "";
  };
  const flushAll = () => {
    sendHeld();
    if (blockText) send({ type: "TEXT", text: blockText });
    blockText = "";
  };
  // A read's events arrive in one synchronous run, and what follows its first delta can be long (the rest of the
  // stream, the run's end, its final checkpoint). They wait for one microtask, queued after the writer's: the
  // first delta's frame leaves first (issue 17, first token), then the rest is handled, its deltas merged.
  const resume = () => {
    const queued = rest;
    if (queued === undefined) return;
    for (let i = 0; i < queued.length && !dropped; i++) handle(queued[i]!);
    rest = undefined;
    if (!dropped) sendHeld();
  };
  /** After the read's first delta went out (and its writer queued its microtask): the rest waits for `resume`. */
  const holdRest = () => {
    rest = [];
    queueMicrotask(resume);
  };
  function handle(event: ModelEvent): void {
    if (event.type === "text_delta" && textOpen) {
      blockText += event.delta;
      if (rest !== undefined) heldText += event.delta;
      else {
        show?.(event.delta);
        holdRest();
      }
      return;
    }
    if (event.type === "thinking_delta" && !textOpen) {
      if (rest !== undefined) heldThinking += event.delta;
      else {
        sendThinking(event.delta);
        holdRest();
      }
      return;
    }
    flushAll();
    if (event.type === "text_start") textOpen = true;
    if (event.type === "text_end") textOpen = false;
    send({ type: "MODEL", event });
  }

  return {
    push(event) {
      if (dropped) return;
      if (rest === undefined) handle(event);
      else rest.push(event);
    },
    flush() {
      resume();
      if (!dropped) flushAll();
    },
    drop() {
      dropped = true;
      rest = undefined;
      heldText = heldThinking = blockText = "";
    },
  };
}
