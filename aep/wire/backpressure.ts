// Backpressure (docs/protocol/aep.md §6): a pure policy over the event kind plus one bounded queue per connection.
// Only message.delta and raw may be dropped, and only when the queue is full; control priority goes ahead of waiting
// data; everything else is kept. Kept events beyond a hard bound mean the client cannot keep up at all: the
// connection is given up (the client reconnects and gets `state`) rather than buffering without limit.
import { redact } from "../../log/logger.js";
import { priorityOf, type ServerEnvelope, type ServerEvent } from "./envelope.js";

export type Admission = "control" | "droppable" | "kept";

export function admissionOf(event: ServerEvent): Admission {
  if (priorityOf(event) === "control") return "control";
  return event.type === "message.delta" || event.type === "raw" ? "droppable" : "kept";
}

export interface QueueLimits {
  /** Queued events at which droppable ones are refused (HotPlex's channel size). */
  capacity: number;
  /** Queued events at which the connection is given up. */
  hardLimit: number;
  /** Bytes the socket may hold unsent before the queue stops handing it more. */
  socketHighWater: number;
}

export const DEFAULT_LIMITS: QueueLimits = { capacity: 256, hardLimit: 8192, socketHighWater: 256 * 1024 };

export interface Socket {
  readonly bufferedAmount: number;
  send(text: string, done: (err?: Error) => void): void;
}

export type Offer = "queued" | "dropped" | "overflow";

/**
 * Events wait here unsequenced; `commit` (the session's sequencer) gives each its seq as it is handed to the socket,
 * so the wire order and the seq order are the same by construction, and a dropped delta never holds a seq.
 */
/** An event to be sequenced as it goes, or an envelope replayed from the log as the text it was logged as. */
type Waiting = { event: ServerEvent } | { replayed: string };

export class OutboundQueue {
  private readonly waiting: Waiting[] = [];
  private controlCount = 0;
  private closed = false;
  private pumping = false;

  constructor(
    private readonly socket: Socket,
    private readonly commit: (event: ServerEvent) => ServerEnvelope | undefined,
    private readonly limits: QueueLimits = DEFAULT_LIMITS,
  ) {}

  get length(): number {
    return this.waiting.length;
  }

  offer(event: ServerEvent): Offer {
    if (this.closed) return "dropped";
    const admission = admissionOf(event);
    if (admission === "droppable" && this.waiting.length >= this.limits.capacity) return "dropped";
    if (admission !== "control" && this.waiting.length >= this.limits.hardLimit) return "overflow";
    if (admission === "control")
      this.waiting.splice(this.controlCount++, 0, { event }); // behind earlier control only
    else this.waiting.push({ event });
    this.pump();
    return "queued";
  }

  /** A logged envelope for a re-attaching client: kept, in order, its seq already given. */
  replay(text: string): Offer {
    if (this.closed) return "dropped";
    if (this.waiting.length >= this.limits.hardLimit) return "overflow";
    // Ahead of waiting data and behind earlier control, like control: a live ack must not overtake older seqs.
    this.waiting.splice(this.controlCount++, 0, { replayed: text });
    this.pump();
    return "queued";
  }

  /** Returns the events that were never handed to the socket (the session logs the kept ones). */
  close(): ServerEvent[] {
    this.closed = true;
    const unsent = this.waiting.flatMap((w) => ("event" in w ? [w.event] : []));
    this.waiting.length = 0;
    this.controlCount = 0;
    return unsent;
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.closed && this.waiting.length > 0 && this.socket.bufferedAmount < this.limits.socketHighWater) {
        const item = this.waiting.shift()!;
        if (this.controlCount > 0) this.controlCount--;
        if ("replayed" in item) {
          this.socket.send(item.replayed, () => this.pump());
          continue;
        }
        const envelope = this.commit(item.event);
        if (envelope) this.socket.send(redact(JSON.stringify(envelope)), () => this.pump());
      }
    } finally {
      this.pumping = false;
    }
  }
}
