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
  readonly frames: Uint8Array[] = [];
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

  /** Replays every frame to the sink, then follows the stream; the returned function detaches it. */
  follow(sink: OutboundSink): () => void {
    for (const payload of this.frames) sink.frame(payload);
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
  }

  /** A reused request_id starts a new epoch: no frames, open again; attached subscribers stay. */
  reopen(): void {
    this.frames.length = 0;
    this.closed = false;
    this.lastSpokeAt = this.now();
  }
}
