// The per-session outbound sequencer (docs/protocol/aep.md §5, §8.1): every seq-bearing
// event of a session passes through here. `emit` checks the ordering invariants on the session's logical stream and
// offers the event to the attached connection's queue; `commit` is the only place a seq is assigned, when the queue
// hands the event to the socket, after the drop decision. Ping/pong and pre-session errors use seq 0 and never come
// here.
import { serverEnvelope, type ServerEnvelope, type ServerEvent, type ServerKind } from "./envelope.js";
import { admissionOf, type Offer } from "./backpressure.js";

/** Kinds that exist only inside a turn (between its state(running) and its done). */
const TURN_KINDS: ReadonlySet<ServerKind> = new Set<ServerKind>([
  "message.start",
  "message.delta",
  "message.end",
  "message",
  "tool_call",
  "tool_result",
  "tool_update",
  "plan",
  "permission_request",
  "question_request",
  "elicitation_request",
  "reasoning",
  "step",
  "done",
  "runtime.execution.started",
]);

export interface Outlet {
  offer(event: ServerEvent): Offer;
}

export interface SequencerOptions {
  sessionId: string;
  /** The last seq this session used (from the store), so a re-attached client never sees a seq go back. */
  lastSeq: number;
  /** An invariant was about to be broken; the event is not sent. */
  onViolation(message: string, event: ServerEvent): void;
  /** The connection cannot keep up even with kept events; the session gives it up. */
  onOverflow(): void;
  /** Persist this mark as the session's last seq: no seq above it is sent until the next reservation. */
  onReserve(mark: number): void;
  /** An event other than `raw` got its seq: the session's durable log takes it (docs/protocol/aep.md §9.3). */
  onLogged(envelope: ServerEnvelope): void;
}

/**
 * Seqs are reserved in blocks ahead of use, so the stored mark is never below a seq a client has seen, even when
 * the gateway dies without a word (SIGKILL) and the last seq itself was never written; a restart goes on above the
 * mark (a gap, never a step back). A new block is asked for half a block early, while its write can still land.
 */
export const SEQ_RESERVATION = 1000;

export class Sequencer {
  private seq: number;
  private reserved: number;
  private outlet: Outlet | undefined;
  /** The open turn; `requests` holds its permission/question/elicitation requests by id, for a client that re-attaches.
   * */
  private turn:
    | {
        executionId: string;
        dropped: boolean;
        /** Open messages by id, with their message.start (sent again to a client that re-attaches mid-message). */
        openMessages: Map<string, ServerEvent>;
        requests: Map<string, ServerEvent>;
      }
    | undefined;
  /** While a re-attaching client is being replayed the log: what gets a seq meanwhile, to send after the replay. */
  private replayBuffer: ServerEnvelope[] | undefined;
  /** Executions whose done was emitted and whose runtime.execution.completed|failed is still due. */
  private readonly awaitingRuntimeEnd = new Set<string>();
  /** Client message ids with input.ack(accepted) emitted and their second ack still due. */
  private readonly awaitingSecondAck = new Set<string>();

  constructor(private readonly o: SequencerOptions) {
    this.seq = o.lastSeq;
    this.reserved = o.lastSeq;
  }

  get lastSeq(): number {
    return this.seq;
  }

  attach(outlet: Outlet): void {
    this.outlet = outlet;
  }

  /** A client re-attaches from a seq: events stay logged-only until finishReplay, and are kept for it. */
  beginReplay(): void {
    this.replayBuffer = [];
  }

  /** The re-attaching connection went away during its replay: what was buffered is in the log anyway. */
  cancelReplay(): void {
    this.replayBuffer = undefined;
  }

  /** Attaches `outlet` and returns what got a seq during the replay (after the log's part, before live events). */
  finishReplay(outlet: Outlet): ServerEnvelope[] {
    const buffered = this.replayBuffer ?? [];
    this.replayBuffer = undefined;
    this.outlet = outlet;
    return buffered;
  }

  /**
   * Tells a newly attached client where the session stands. Inside an open turn that is state(running): the client
   * joins the turn (it does not open a second one), the requests still waiting for an answer (`openRequests`, by
   * id) are sent again — the turn cannot go on without them — and the turn's remaining events follow.
   */
  announce(state: "created" | "idle" | "terminated", openRequests: readonly string[] = []): void {
    if (!this.turn) return this.emit({ type: "state", data: { state } });
    this.outlet?.offer({ type: "state", data: { state: "running", message: "turn in progress" } });
    // A client that joins mid-message gets its start before any of its deltas; the ones it missed make done.dropped.
    for (const start of this.turn.openMessages.values()) {
      this.turn.dropped = true;
      this.outlet?.offer(start);
    }
    for (const id of openRequests) {
      const request = this.turn.requests.get(id);
      if (request) this.outlet?.offer(request);
    }
  }

  /**
   * `unsent`: what the connection's queue still held. Those events already passed the checks, so they get their seq
   * now and go to the log (a delta is dropped, as it would have been for a slow client).
   */
  detach(outlet: Outlet, unsent: readonly ServerEvent[] = []): void {
    if (this.outlet !== outlet) return;
    this.outlet = undefined;
    for (const event of unsent) this.keepUnsent(event);
  }

  /** `executionId` names the turn an event belongs to; required for state(running) and the runtime facts. */
  emit(event: ServerEvent, executionId?: string): void {
    const violation = this.check(event, executionId);
    if (violation) return this.o.onViolation(violation, event);
    let out = event;
    if (event.type === "done" && this.turn!.dropped) out = { type: "done", data: { ...event.data, dropped: true } };
    this.advance(event, executionId);
    if (!this.outlet) return this.keepUnsent(out);
    const offer = this.outlet.offer(out);
    // done.dropped tells the client its text is incomplete (docs/protocol/aep.md): only a lost delta means that.
    if (offer === "dropped" && this.turn && event.type === "message.delta") this.turn.dropped = true;
    if (offer === "overflow") this.o.onOverflow();
  }

  /** Nobody to send it to: a kept event gets its seq and goes to the log; a droppable one is lost. */
  private keepUnsent(event: ServerEvent): void {
    if (admissionOf(event) !== "droppable") {
      const envelope = this.commit(event);
      this.replayBuffer?.push(envelope);
      return;
    }
    if (this.turn && event.type === "message.delta") this.turn.dropped = true;
  }

  /** Called by the connection's queue as it hands an event to the socket. */
  commit(event: ServerEvent): ServerEnvelope {
    this.seq += 1;
    if (this.seq > this.reserved - SEQ_RESERVATION / 2) {
      this.reserved = this.seq + SEQ_RESERVATION;
      this.o.onReserve(this.reserved);
    }
    const envelope = serverEnvelope(this.o.sessionId, this.seq, event);
    // A delta is logged only as the fact that it had this seq: a replay cannot send it, but knows it was missed.
    if (event.type !== "raw") this.o.onLogged(envelope);
    return envelope;
  }

  private check(event: ServerEvent, executionId: string | undefined): string | undefined {
    const turn = this.turn;
    switch (event.type) {
      case "state":
        if (event.data.state === "running") {
          if (turn) return `state(running) while turn ${turn.executionId} is open`;
          if (!executionId) return "state(running) without an execution";
        } else if (turn) return `state(${event.data.state}) inside turn ${turn.executionId}`;
        return undefined;
      case "runtime.execution.completed":
      case "runtime.execution.failed":
        return this.awaitingRuntimeEnd.has(event.data.execution_id)
          ? undefined
          : `${event.type} for ${event.data.execution_id} before its done (or twice)`;
      case "input.ack":
        if (event.data.duplicate || event.data.status === "accepted") return undefined;
        return this.awaitingSecondAck.has(event.data.client_message_id)
          ? undefined
          : `input.ack(${event.data.status}) for ${event.data.client_message_id} without accepted`;
      case "error":
        return executionId && turn?.executionId !== executionId
          ? `turn error after the done of ${executionId}`
          : undefined;
      case "message.delta":
      case "message.end":
        if (!turn) return `${event.type} outside a turn`;
        return turn.openMessages.has(event.data.message_id)
          ? undefined
          : `${event.type} for message ${event.data.message_id} that is not open`;
      default:
        if (!TURN_KINDS.has(event.type)) return undefined;
        if (!turn) return `${event.type} outside a turn`;
        if (executionId && executionId !== turn.executionId)
          return `${event.type} of ${executionId} inside turn ${turn.executionId}`;
        return undefined;
    }
  }

  private advance(event: ServerEvent, executionId: string | undefined): void {
    switch (event.type) {
      case "state":
        if (event.data.state === "running")
          this.turn = { executionId: executionId!, dropped: false, openMessages: new Map(), requests: new Map() };
        return;
      case "permission_request":
      case "question_request":
      case "elicitation_request":
        this.turn!.requests.set(event.data.id, event);
        return;
      case "message.start":
        this.turn!.openMessages.set(event.data.id, event);
        return;
      case "message.end":
        this.turn!.openMessages.delete(event.data.message_id);
        return;
      case "done":
        this.awaitingRuntimeEnd.add(this.turn!.executionId);
        this.turn = undefined;
        return;
      case "runtime.execution.completed":
      case "runtime.execution.failed":
        this.awaitingRuntimeEnd.delete(event.data.execution_id);
        return;
      case "input.ack":
        if (event.data.duplicate) return;
        if (event.data.status === "accepted") this.awaitingSecondAck.add(event.data.client_message_id);
        else this.awaitingSecondAck.delete(event.data.client_message_id);
        return;
    }
  }
}
