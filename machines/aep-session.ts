// AepSession: one AEP session (docs/protocol/aep.md §9): idle ⇄ busy, with one AepTurn invoked per accepted input
// and the worker process as a spawned child per generation. Worker events are routed only when they carry the
// current generation, so late events of a killed or replaced process change nothing (aep.md §9.6). The worker starts on
// the first input (the CLI prints nothing before one), resumes its own session after a crash or gc, and a reset
// gives it a new one. Controls other than stop end a running turn first; their `state` follows that turn's `done`.
import { assign, enqueueActions, fromCallback, sendTo, setup } from "xstate";
import type { ServerEvent } from "../aep/wire/envelope.js";
import type { InteractionAnswer, WorkerEvent } from "../workers/types.js";
import { aepTurnMachine, type AepTurnInput } from "./aep-turn.js";

export interface AepSessionInput {
  sessionId: string;
  workdir: string;
  workerSessionId: string;
  /** The worker already holds a transcript for workerSessionId: the next start resumes it. */
  workerStarted: boolean;
}

export type SessionControl = { action: "gc" | "reset" | "terminate" | "delete" } | { action: "cd"; workdir: string };

interface AepSessionContext extends AepSessionInput {
  generation: number;
  workerAlive: boolean;
  /** A control that waits for the running turn's done before it takes effect. */
  pendingControl: SessionControl | undefined;
}

export interface WorkerProcessInput {
  generation: number;
  workdir: string;
  workerSessionId: string;
  resume: boolean;
}

export type AepSessionEvent =
  | { type: "INPUT"; executionId: string; clientMessageId: string; content: string }
  | { type: "STOP" }
  /** `clientMessageId`: the response's envelope id, named by the error a rejected answer gets. */
  | { type: "ANSWER"; id: string; answer: InteractionAnswer; clientMessageId?: string }
  | { type: "CONTROL"; control: SessionControl }
  | { type: "WORKER"; generation: number; event: WorkerEvent };

const workerChild = (generation: number) => `worker-${generation}`;
const isControl = (event: AepSessionEvent, action: SessionControl["action"]) =>
  event.type === "CONTROL" && event.control.action === action;

const sessionSetup = setup({
  types: {
    context: {} as AepSessionContext,
    input: {} as AepSessionInput,
    events: {} as AepSessionEvent,
  },
  actors: {
    turn: aepTurnMachine,
    /** Starts one worker process, reports its events as WORKER with its generation, kills it when stopped. */
    workerProcess: fromCallback<{ type: "NONE" }, WorkerProcessInput>(() => {
      throw new Error("workerProcess must be supplied by the session wiring");
    }),
  },
  actions: {
    /** A session-level event through the sequencer (supplied by the wiring). */
    emit: (_, _params: { event: ServerEvent }) => {},
    /** Persists what a restart needs (supplied by the wiring). */
    persist: (
      _,
      _params: {
        workdir: string;
        workerSessionId: string;
        workerStarted: boolean;
        state: "idle" | "running" | "terminated";
      },
    ) => {},
    /** Forgets the session: store row, registry entry, connection (supplied by the wiring). */
    forget: () => {},
    /** A worker asked something outside any turn: nobody can answer, so it is denied at once. */
    denyStray: (_, _params: { generation: number; id: string }) => {},
    /** A response for a request no turn holds open (supplied by the wiring: an INVALID_MESSAGE error). */
    rejectAnswer: (_, _params: { id: string; clientMessageId?: string | undefined }) => {},
  },
  guards: {
    fromCurrentWorker: ({ context, event }) =>
      event.type === "WORKER" && context.workerAlive && event.generation === context.generation,
    /** The current worker process is gone (a crash, or an exit the session did not ask for). */
    currentWorkerExited: ({ context, event }) =>
      event.type === "WORKER" &&
      context.workerAlive &&
      event.generation === context.generation &&
      event.event.type === "worker.exited",
    workerAlive: ({ context }) => context.workerAlive,
    controlPending: ({ context }) => context.pendingControl !== undefined,
    gc: ({ event }) => isControl(event, "gc"),
    reset: ({ event }) => isControl(event, "reset"),
    cd: ({ event }) => isControl(event, "cd"),
    terminate: ({ event }) => isControl(event, "terminate"),
    delete: ({ event }) => isControl(event, "delete"),
  },
  delays: { idleReclaim: 10 * 60_000 },
});

const ensureWorker = sessionSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    if (context.workerAlive) return;
    const generation = context.generation + 1;
    enqueue.assign({ generation, workerAlive: true });
    enqueue.spawnChild("workerProcess", {
      id: workerChild(generation),
      input: {
        generation,
        workdir: context.workdir,
        workerSessionId: context.workerSessionId,
        resume: context.workerStarted,
      },
    });
  }),
);

/** Bookkeeping every current-generation worker event gets, in or out of a turn. */
const observeWorker = sessionSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "WORKER") return;
    if (event.event.type !== "worker.ready" || context.workerStarted) return;
    enqueue.assign({ workerStarted: true });
    enqueue({
      type: "persist",
      params: {
        workdir: context.workdir,
        workerSessionId: context.workerSessionId,
        workerStarted: true,
        state: "running",
      },
    });
  }),
);

/** The process already ended on its own: forget its child; the next input starts (and resumes) a new one. */
const forgetWorker = sessionSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    enqueue.assign({ workerAlive: false });
    enqueue.stopChild(workerChild(context.generation));
  }),
);

/** Outside a turn only a few worker events mean anything to the client. */
const observeIdleWorker = sessionSetup.createAction(
  enqueueActions(({ event, enqueue }) => {
    if (event.type !== "WORKER") return;
    const w = event.event;
    if (w.type === "interaction.requested")
      enqueue({ type: "denyStray", params: { generation: event.generation, id: w.id } });
    if (w.type === "raw")
      enqueue({ type: "emit", params: { event: { type: "raw", data: { kind: "worker", raw: w.frame } } } });
  }),
);

/** Stopping the child kills the process; its late events carry a generation nobody routes any more. */
const releaseWorker = sessionSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    if (!context.workerAlive) return;
    enqueue.stopChild(workerChild(context.generation));
    enqueue.assign({ workerAlive: false });
  }),
);

/** A control's effect, once no turn runs; persists where the session stands and tells the client. */
const applyControl = sessionSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== "CONTROL") return;
    const control = event.control;
    let { workdir, workerSessionId, workerStarted } = context;
    if (control.action === "reset" || control.action === "cd") {
      workerSessionId = crypto.randomUUID();
      workerStarted = false;
      if (control.action === "cd") workdir = control.workdir;
      enqueue.assign({ workdir, workerSessionId, workerStarted });
    }
    const terminated = control.action === "terminate" || control.action === "delete";
    enqueue({
      type: "persist",
      params: { workdir, workerSessionId, workerStarted, state: terminated ? "terminated" : "idle" },
    });
    const message = {
      gc: "worker released",
      reset: "context reset",
      cd: `working directory ${workdir}`,
      terminate: "session terminated",
      delete: "session deleted",
    }[control.action];
    enqueue({
      type: "emit",
      params: { event: { type: "state", data: { state: terminated ? "terminated" : "idle", message } } },
    });
  }),
);

/** The control the turn ended for goes through the same edges as one sent while idle. */
const raisePendingControl = sessionSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    if (!context.pendingControl) return;
    enqueue.raise({ type: "CONTROL", control: context.pendingControl });
    enqueue.assign({ pendingControl: undefined });
  }),
);

export const aepSessionMachine = sessionSetup.createMachine({
  description:
    "One per AEP session: idle ⇄ busy with one turn per accepted input. The worker starts on the first input," +
    " as a child per generation; only events of the current generation are routed, so a killed or replaced " +
    "process changes nothing. A worker crash, gc or the idle reclaim (10 minutes) releases the worker and the " +
    "next input resumes the worker's own session; reset and cd give it a new one; terminate and delete end " +
    "the session — each its own edge. A control during a turn ends that turn first (the turn's own " +
    "session-control edge) and takes effect, through the same edges, after the turn's done.",
  id: "aepSession",
  context: ({ input }) => ({ ...input, generation: 0, workerAlive: false, pendingControl: undefined }),
  initial: "idle",
  states: {
    idle: {
      entry: raisePendingControl,
      // A worker nobody used for a while goes (about 190 MB each); the next input resumes its session.
      after: { idleReclaim: { guard: "workerAlive", target: "idle", actions: releaseWorker } },
      on: {
        INPUT: { target: "busy", actions: ensureWorker },
        // Nothing to stop (the turn already ended, or none began): the client still learns where the session stands.
        STOP: {
          actions: {
            type: "emit",
            params: { event: { type: "state", data: { state: "idle", message: "no turn to stop" } } },
          },
        },
        ANSWER: {
          actions: {
            type: "rejectAnswer",
            params: ({ event }) => ({ id: event.id, clientMessageId: event.clientMessageId }),
          },
        },
        CONTROL: [
          { guard: "gc", target: "idle", reenter: true, actions: [releaseWorker, applyControl] },
          { guard: "reset", target: "idle", reenter: true, actions: [releaseWorker, applyControl] },
          { guard: "cd", target: "idle", reenter: true, actions: [releaseWorker, applyControl] },
          { guard: "terminate", target: "terminated", actions: applyControl },
          { guard: "delete", target: "deleted", actions: applyControl },
        ],
        WORKER: [
          { guard: "currentWorkerExited", target: "idle", actions: forgetWorker },
          { guard: "fromCurrentWorker", actions: [observeWorker, observeIdleWorker] },
        ],
      },
    },
    busy: {
      invoke: {
        id: "turn",
        src: "turn",
        input: ({ context, event }): AepTurnInput => {
          const e = event as Extract<AepSessionEvent, { type: "INPUT" }>;
          return {
            executionId: e.executionId,
            clientMessageId: e.clientMessageId,
            content: e.content,
            generation: context.generation,
          };
        },
        onDone: [
          // The control the turn ended for answers with its own state once idle.
          { guard: "controlPending", target: "idle" },
          {
            target: "idle",
            actions: { type: "emit", params: { event: { type: "state", data: { state: "idle" } } } },
          },
        ],
      },
      initial: "running",
      states: {
        running: {},
        /** A control arrived: the turn is ending for it; the control takes effect once idle. */
        endingForControl: {},
      },
      on: {
        WORKER: [
          // The turn ends failed (worker crash) on the exit it is forwarded.
          { guard: "currentWorkerExited", actions: [sendTo("turn", ({ event }) => event), forgetWorker] },
          { guard: "fromCurrentWorker", actions: [sendTo("turn", ({ event }) => event), observeWorker] },
        ],
        STOP: { actions: sendTo("turn", { type: "STOP" }) },
        ANSWER: { actions: sendTo("turn", ({ event }) => event) },
        // The turn ends stopped with the control's name as its reason; the worker goes with it.
        CONTROL: {
          target: ".endingForControl",
          actions: [
            assign({ pendingControl: ({ event }) => event.control }),
            sendTo("turn", ({ event }) => ({ type: "CONTROL" as const, reason: event.control.action })),
            releaseWorker,
          ],
        },
      },
    },
    terminated: { type: "final", entry: releaseWorker },
    deleted: { type: "final", entry: [releaseWorker, "forget"] },
  },
});
