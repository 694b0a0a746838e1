// RequestStream: one per request_id (docs/protocol/cursor-transport.md §1, §6; docs/protocol/cursor-run.md §10.6).
// Admits BidiAppend messages in append_seqno order (duplicates dropped, gaps wait), owns the outbound log so a
// reconnecting RunSSE subscriber gets the whole stream again (kept as encoded AgentServerMessage payloads: bytes, not
// object graphs, are what a long run retains and what a replay writes), sends a heartbeat after 5 s of silence (never
// stored), asks for the run to be abandoned when no subscriber came back within the reconnect grace, ends a stream
// whose run_request never came, and keeps a terminal stream for 30 s.
import { assign, cancel, enqueueActions, raise, setup } from "xstate";
import type { AgentClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { type EndStream, RpcError } from "../cursor/errors.js";
import { OutboundLog } from "./outbound-log.js";

/** A gap larger than this many held messages is refused rather than buffered without bound. */
export const MAX_HELD_APPENDS = 1024;
/** How long a stream waits for its run_request (docs/protocol/cursor-transport.md §6.9); the `Run` route too. */
export const RUN_REQUEST_WAIT_MS = 30_000;
/** Frames kept for replay; a run that would exceed it is failed by the engine (a captured long turn had ~3,200). */
export const MAX_BACKLOG_FRAMES = 100_000;
/** Silence after which a heartbeat is sent (docs/protocol/cursor-transport.md §6.5). */
export const HEARTBEAT_MS = 5_000;

export interface RequestStreamContext {
  requestId: string;
  nextSeqno: bigint;
  held: ReadonlyMap<bigint, AgentClientMessage>;
  /**
   * The frames of this stream epoch and the subscribers they are written to. The engine appends to it directly;
   * the machine opens, closes and reopens it and reads its silence for the heartbeat.
   */
  outbound: OutboundLog;
  end: EndStream | undefined;
  subscribers: number;
  heartbeatMs: number;
}

export interface RequestStreamInput {
  requestId: string;
  heartbeatMs?: number;
  /** The clock the outbound log stamps frames with; it must be the one the actor's timers run on. */
  now?: () => number;
}

export type RequestStreamEvent =
  | { type: "APPEND"; seqno: bigint; message: AgentClientMessage }
  | { type: "END"; end: EndStream }
  | { type: "SUBSCRIBE" }
  | { type: "UNSUBSCRIBE" }
  /** Internal: the heartbeat timer ran out (raised by the stream itself, never sent from outside). */
  | { type: "SILENCE" };

/** Which held messages become deliverable after admitting `seqno` (docs/protocol/cursor-transport.md §6: < next
 * dropped, > next waits). */
export function admit(
  ctx: Pick<RequestStreamContext, "nextSeqno" | "held">,
  seqno: bigint,
  message: AgentClientMessage,
): { deliver: AgentClientMessage[]; nextSeqno: bigint; held: Map<bigint, AgentClientMessage> } {
  const held = new Map(ctx.held);
  if (seqno <= 0n) return { deliver: [message], nextSeqno: ctx.nextSeqno, held }; // unsequenced: bypasses ordering
  if (seqno < ctx.nextSeqno || held.has(seqno)) return { deliver: [], nextSeqno: ctx.nextSeqno, held };
  held.set(seqno, message);
  const deliver: AgentClientMessage[] = [];
  let next = ctx.nextSeqno;
  while (held.has(next)) {
    deliver.push(held.get(next)!);
    held.delete(next);
    next += 1n;
  }
  return { deliver, nextSeqno: next, held };
}

const isRunRequest = (m: AgentClientMessage) => m.message.case === "runRequest";

const requestStreamSetup = setup({
  types: {
    context: {} as RequestStreamContext,
    events: {} as RequestStreamEvent,
    input: {} as RequestStreamInput,
  },
  actions: {
    /** Hands an admitted client message to the run side (supplied by the engine). */
    deliver: (_, _params: { message: AgentClientMessage }) => {},
    /** No subscriber came back within the grace: the run must be canceled (supplied by the engine). */
    abandon: () => {},
    heartbeat: ({ context }) => context.outbound.heartbeat(),
    subscribe: assign({ subscribers: ({ context }) => context.subscribers + 1 }),
    unsubscribe: assign({ subscribers: ({ context }) => Math.max(0, context.subscribers - 1) }),
  },
  guards: {
    hasSubscribers: ({ context }) => context.subscribers > 0,
    noSubscribers: ({ context }) => context.subscribers === 0,
    /** Cursor reuses an ended request_id by starting again at append_seqno 1 with a new run_request
     * (docs/protocol/cursor-transport.md §6). */
    restartsRequest: ({ event }) => event.type === "APPEND" && event.seqno === 1n && isRunRequest(event.message),
    carriesRunRequest: ({ event }) => event.type === "APPEND" && isRunRequest(event.message),
    /** Nothing was written for a whole heartbeat interval. */
    silentForInterval: ({ context }) => context.outbound.silence() >= context.heartbeatMs,
  },
  delays: {
    /** The rest of the interval since the stream last spoke: the whole interval on entry and after a heartbeat. */
    heartbeatAfter: ({ context }) => Math.max(0, context.heartbeatMs - context.outbound.silence()),
    reconnectGrace: 30_000,
    retention: 30_000,
    /** In line with the reconnect grace: a client that opened RunSSE appends its run_request at once. */
    runRequestWait: RUN_REQUEST_WAIT_MS,
  },
});

/** A RunSSE opened for a request_id that never got its run_request (docs/protocol/cursor-transport.md §6.9). */
export const noRunRequestEnd: EndStream = {
  ok: false,
  error: new RpcError("no run_request arrived for this request_id in time; RunSSE closed", "deadline_exceeded"),
};

const expire = requestStreamSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    enqueue.assign({ end: noRunRequestEnd });
    context.outbound.close(noRunRequestEnd);
  }),
);

const admitAppend = requestStreamSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "APPEND") return;
    const { deliver, nextSeqno, held } = admit(context, event.seqno, event.message);
    enqueue.assign({ nextSeqno, held });
    for (const message of deliver) enqueue({ type: "deliver", params: { message } });
  }),
);

const HEARTBEAT_TIMER = "heartbeat";
const armHeartbeat = requestStreamSetup.createAction(
  raise({ type: "SILENCE" } as const, { id: HEARTBEAT_TIMER, delay: "heartbeatAfter" }),
);

const resetForReuse = requestStreamSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    context.outbound.reopen();
    enqueue.assign({ nextSeqno: 1n, held: () => new Map(), end: undefined });
  }),
);

const recordEnd = requestStreamSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "END") return;
    enqueue.assign({ end: event.end });
    context.outbound.close(event.end);
  }),
);

export const requestStreamMachine = requestStreamSetup.createMachine({
  description:
    "One per request_id. BidiAppend messages are admitted strictly in append_seqno order: duplicates are " +
    "dropped, a gap waits (bounded), unsequenced messages pass through. Every outbound frame is kept in the " +
    "outbound log so a reconnecting RunSSE subscriber receives the whole stream again; frames are appended to " +
    "the log, not sent as events. A heartbeat follows 5 s of silence and is never stored: the SILENCE timer " +
    "either finds the whole interval silent and sends it, or re-arms for the rest of the interval since the " +
    "last frame. With no subscriber for 30 s the run is abandoned (canceled). A stream whose " +
    "run_request does not arrive within 30 s ends with deadline_exceeded. After the " +
    "EndStream the stream stays replayable for 30 s, then disappears; a request_id that starts again at " +
    "append_seqno 1 with a new run_request is reused.",
  id: "requestStream",
  context: ({ input }) => ({
    requestId: input.requestId,
    nextSeqno: 1n,
    held: new Map(),
    outbound: new OutboundLog(input.now ?? (() => performance.now())),
    end: undefined,
    subscribers: 0,
    heartbeatMs: input.heartbeatMs ?? HEARTBEAT_MS,
  }),
  initial: "open",
  states: {
    open: {
      type: "parallel",
      on: {
        APPEND: { actions: admitAppend },
        END: { target: "terminal", actions: recordEnd },
        SUBSCRIBE: { actions: "subscribe" },
        UNSUBSCRIBE: { actions: "unsubscribe" },
      },
      states: {
        link: {
          initial: "detached",
          states: {
            detached: {
              always: { guard: "hasSubscribers", target: "attached" },
              after: { reconnectGrace: { target: "abandoned", actions: "abandon" } },
            },
            attached: { always: { guard: "noSubscribers", target: "detached" } },
            /** The run was asked to cancel; its END moves the stream to terminal. */
            abandoned: {},
          },
        },
        run: {
          initial: "awaitingRunRequest",
          states: {
            awaitingRunRequest: {
              // Taking this edge pre-empts open's APPEND handler, so it admits the append itself.
              on: { APPEND: { guard: "carriesRunRequest", target: "requested", actions: admitAppend } },
              after: { runRequestWait: { target: "#requestStream.terminal", actions: expire } },
            },
            requested: {},
          },
        },
        output: {
          initial: "quiet",
          states: {
            // One delayed SILENCE per interval, never touched by a frame (issue 17: no timer work per delta). When it
            // fires, the log says whether the stream spoke since: the heartbeat still follows exactly 5 s of silence.
            quiet: {
              entry: armHeartbeat,
              exit: cancel(HEARTBEAT_TIMER),
              on: {
                // Targeted (drawn in the lifecycle diagram) but not re-entering: no exit or entry actions run.
                // A heartbeat with nobody attached is harmless, so the timer simply re-arms.
                SILENCE: [
                  { guard: "silentForInterval", target: "quiet", actions: ["heartbeat", armHeartbeat] },
                  { target: "quiet", actions: armHeartbeat },
                ],
              },
            },
          },
        },
      },
    },
    terminal: {
      on: {
        APPEND: {
          guard: "restartsRequest",
          target: "#requestStream.open.run.requested",
          actions: [resetForReuse, admitAppend],
        },
        SUBSCRIBE: { actions: "subscribe" },
        UNSUBSCRIBE: { actions: "unsubscribe" },
      },
      after: { retention: "gone" },
    },
    gone: { type: "final" },
  },
});
