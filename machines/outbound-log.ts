// The RequestStream's outbound log (docs/protocol/cursor-transport.md §6; docs/protocol/cursor-run.md §10.6): the
// encoded frames of one stream epoch, kept for replay and written to the attached subscribers as they are appended.
// The RequestStream creates and owns it; a frame is not a machine event (issue 17: each paced delta would otherwise
// cost a second macrostep), but the log stamps when the stream last spoke, which the machine's heartbeat reads.
import type { EndStream } from "../cursor/errors.js";

/** One attached subscriber (a RunSSE or Run response). */
export interface OutboundSink {
  /** One encoded AgentServerMessage (its protobuf payload, without the Connect envelope). */
  frame(payload: Uint8Array): void;
  heartbeat(): void;
  end(end: EndStream): void;
}

export class OutboundLog {
  /** Encoded AgentServerMessages, append-only: a reconnecting subscriber receives all of them again. */
  private readonly frames: Uint8Array[] = [];
  /**
   * The frames of an ended stream, packed into one buffer (`ends[i]` is where frame i ends): it is kept through the
   * terminal retention for a late subscriber, and one buffer is a fraction of the memory and of the garbage
   * collector's work of thousands of small arrays (docs/performance.md).
   */
  private packed: { bytes: Uint8Array; ends: Uint32Array } | undefined;
  private readonly sinks = new Set<OutboundSink>();
  private lastSpokeAt: number;
  private closed = false;

  /** `now` is the clock the machine's timers run on (a SimulatedClock in the machine tests). */
  constructor(private readonly now: () => number) {
    this.lastSpokeAt = now();
  }

  /** Records the frame and writes it to every subscriber; false once the stream has ended (nothing follows an
   * EndStream). */
  append(payload: Uint8Array): boolean {
    if (this.closed) return false;
    this.frames.push(payload);
    this.lastSpokeAt = this.now();
    for (const sink of this.sinks) sink.frame(payload);
    return true;
  }

  /** How many frames the log holds. */
  get size(): number {
    return this.packed?.ends.length ?? this.frames.length;
  }

  /** Every frame so far, in order, to the sink. */
  replay(sink: Pick<OutboundSink, "frame">): void {
    if (!this.packed) {
      for (const payload of this.frames) sink.frame(payload);
      return;
    }
    const { bytes, ends } = this.packed;
    let start = 0;
    for (const end of ends) {
      sink.frame(bytes.subarray(start, end));
      start = end;
    }
  }

  /** Replays every frame to the sink, then follows the stream; the returned function detaches it. */
  follow(sink: OutboundSink): () => void {
    this.replay(sink);
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }

  /** Milliseconds since the last frame or heartbeat (or since the epoch began). */
  silence(): number {
    return this.now() - this.lastSpokeAt;
  }

  /** A heartbeat goes to the subscribers only: it is never replayed. */
  heartbeat(): void {
    this.lastSpokeAt = this.now();
    for (const sink of this.sinks) sink.heartbeat();
  }

  close(end: EndStream): void {
    this.closed = true;
    for (const sink of this.sinks) sink.end(end);
    this.pack();
  }

  /** A reused request_id starts a new epoch: no frames, open again; attached subscribers stay. */
  reopen(): void {
    this.frames.length = 0;
    this.packed = undefined;
    this.closed = false;
    this.lastSpokeAt = this.now();
  }

  private pack(): void {
    if (this.packed || this.frames.length === 0) return;
    const ends = new Uint32Array(this.frames.length);
    let total = 0;
    this.frames.forEach((payload, i) => {
      total += payload.length;
      ends[i] = total;
    });
    this.packed = { bytes: Buffer.concat(this.frames, total), ends };
    this.frames.length = 0;
  }
}
