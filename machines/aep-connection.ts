// AepConnection: one WebSocket (docs/protocol/aep.md §9.1). The first frame must be `init` within 30 s,
// else a clear error and close. Frames that arrive while the session is being found or created are held (bounded)
// and replayed in order once attached. ping is answered in every state. After close nothing reaches the session: a
// late attach result finds the machine gone, and the wiring detaches a connection that closed during its attach.
import { assign, enqueueActions, fromPromise, setup } from "xstate";
import type { ClientEnvelope, ErrorCause, ErrorCode } from "../aep/wire/envelope.js";

/** Frames held during the attach; a client that sends more before its `state` arrives is refused. */
export const MAX_HELD_FRAMES = 64;

export interface InitRequest {
  id: string;
  data: Extract<ClientEnvelope["event"], { type: "init" }>["data"];
}

export type AepConnectionEvent =
  | { type: "FRAME"; envelope: ClientEnvelope }
  | { type: "SOCKET_CLOSED" }
  /** The client answered no WebSocket ping within the heartbeat interval: a half-open socket (aep.md §9.2). */
  | { type: "HEARTBEAT_MISSED" };

/** Why an attach was refused; the wiring's attach rejects with it. */
export class AttachRefused extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Why a connection ended; each is its own edge into `closed`, and the machine's output. */
export type ConnectionEndCause =
  | "init_timeout"
  | "attach_refused"
  | "flooded_before_state"
  | "closed_before_init"
  | "closed_during_attach"
  | "closed"
  | "heartbeat_missed";

interface AepConnectionContext {
  held: readonly ClientEnvelope[];
  /** The init being attached: a refusal names it. */
  initId: string | undefined;
  end: ConnectionEndCause | undefined;
}

const connectionSetup = setup({
  types: {
    context: {} as AepConnectionContext,
    events: {} as AepConnectionEvent,
  },
  actors: {
    /** Finds or creates the session for this init, attaches this connection and sends `state` (supplied by the wiring).
     * */
    attach: fromPromise<void, InitRequest>(async () => {
      throw new AttachRefused("INTERNAL_ERROR", "attach must be supplied by the listener wiring");
    }),
  },
  actions: {
    /** pong with seq 0 (supplied by the wiring). */
    pong: () => {},
    /** An error envelope on this connection, outside any turn (supplied by the wiring). */
    sendError: (_, _params: { code: ErrorCode; message: string; cause?: ErrorCause }) => {},
    /** Closes the socket with a reason (supplied by the wiring). */
    close: (_, _params: { reason: string }) => {},
    /** Drops a socket that stopped answering pings, without a close handshake nobody would answer (wiring). */
    terminate: () => {},
    /** Hands a frame to the attached session (supplied by the wiring). */
    route: (_, _params: { envelope: ClientEnvelope }) => {},
    /** Releases the session this connection held, if any (supplied by the wiring). */
    detach: () => {},
    hold: assign({
      held: ({ context, event }) => (event.type === "FRAME" ? [...context.held, event.envelope] : context.held),
    }),
    recordEnd: assign((_, params: { cause: ConnectionEndCause }) => ({ end: params.cause })),
  },
  guards: {
    isInit: ({ event }) => event.type === "FRAME" && event.envelope.event.type === "init",
    isPing: ({ event }) => event.type === "FRAME" && event.envelope.event.type === "ping",
    holdIsFull: ({ context }) => context.held.length >= MAX_HELD_FRAMES,
  },
  delays: { initTimeout: 30_000 },
});

const replayHeld = connectionSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    enqueue.assign({ held: [] });
    for (const envelope of context.held) enqueue.raise({ type: "FRAME", envelope });
  }),
);

const endBy = (cause: ConnectionEndCause) => ({ type: "recordEnd" as const, params: { cause } });
const initTwice = {
  type: "sendError",
  params: ({ event }: { event: AepConnectionEvent }) => ({
    code: "PROTOCOL_VIOLATION" as const,
    message: "init sent twice",
    ...(event.type === "FRAME" ? { cause: { client_message_id: event.envelope.id } } : {}),
  }),
} as const;

export const aepConnectionMachine = connectionSetup.createMachine({
  description:
    "One per AEP WebSocket. The first frame must be init within 30 s, else an error and close; frames sent " +
    "while the session is being found or created are held (at most 64) and replayed in order. ping is " +
    "answered (seq 0) in every state. After the socket closes nothing reaches the session, and a connection " +
    "that closed during its attach is never attached. Each ending is its own edge: init timeout, attach " +
    "refused, too many frames before state, socket closed before init, during the attach or once attached, " +
    "and a missed heartbeat (a half-open socket is dropped so the session can be re-attached).",
  id: "aepConnection",
  context: { held: [], initId: undefined, end: undefined },
  initial: "awaitingInit",
  output: ({ context }) => ({ cause: context.end! }),
  states: {
    awaitingInit: {
      on: {
        SOCKET_CLOSED: { target: "closed", actions: endBy("closed_before_init") },
        FRAME: [
          {
            guard: "isInit",
            target: "attaching",
            actions: assign({ initId: ({ event }) => (event.type === "FRAME" ? event.envelope.id : undefined) }),
          },
          { guard: "isPing", actions: "pong" },
          {
            actions: {
              type: "sendError",
              params: ({ event }) => ({
                code: "PROTOCOL_VIOLATION" as const,
                message: `init must come first, got ${event.envelope.event.type}`,
                cause: { client_message_id: event.envelope.id },
              }),
            },
          },
        ],
      },
      after: {
        initTimeout: {
          target: "closed",
          actions: [
            endBy("init_timeout"),
            { type: "sendError", params: { code: "PROTOCOL_VIOLATION", message: "no init within 30 s of connecting" } },
            { type: "close", params: { reason: "init timeout" } },
          ],
        },
      },
    },
    attaching: {
      invoke: {
        src: "attach",
        input: ({ event }) => {
          const envelope = (event as Extract<AepConnectionEvent, { type: "FRAME" }>).envelope;
          return { id: envelope.id, data: envelope.event.data as InitRequest["data"] };
        },
        onDone: "attached",
        onError: {
          target: "closed",
          actions: enqueueActions(({ context, event, enqueue }) => {
            const refused =
              event.error instanceof AttachRefused
                ? event.error
                : new AttachRefused(
                    "INTERNAL_ERROR",
                    `init failed: ${event.error instanceof Error ? event.error.message : String(event.error)}`,
                  );
            enqueue(endBy("attach_refused"));
            enqueue({
              type: "sendError",
              params: {
                code: refused.code,
                message: refused.message,
                ...(context.initId ? { cause: { client_message_id: context.initId } } : {}),
              },
            });
            enqueue({ type: "close", params: { reason: refused.code } });
          }),
        },
      },
      on: {
        SOCKET_CLOSED: { target: "closed", actions: endBy("closed_during_attach") },
        FRAME: [
          { guard: "isPing", actions: "pong" },
          { guard: "isInit", actions: initTwice },
          {
            guard: "holdIsFull",
            target: "closed",
            actions: [
              endBy("flooded_before_state"),
              {
                type: "sendError",
                params: {
                  code: "RATE_LIMITED",
                  message: `more than ${MAX_HELD_FRAMES} frames before the session was ready`,
                },
              },
              { type: "close", params: { reason: "too many frames before state" } },
            ],
          },
          { actions: "hold" },
        ],
      },
    },
    attached: {
      entry: replayHeld,
      on: {
        SOCKET_CLOSED: { target: "closed", actions: endBy("closed") },
        // The session is freed for a re-attach at once; the socket is dropped, not closed politely.
        HEARTBEAT_MISSED: { target: "closed", actions: [endBy("heartbeat_missed"), "terminate"] },
        FRAME: [
          { guard: "isPing", actions: "pong" },
          { guard: "isInit", actions: initTwice },
          { actions: { type: "route", params: ({ event }) => ({ envelope: event.envelope }) } },
        ],
      },
    },
    closed: { type: "final", entry: "detach" },
  },
});
