// WorkerProcess: one OS process of a worker (docs/protocol/aep.md), numbered by its generation so that late callbacks
// of a replaced process are recognisable. spawning → ready ⇄ busy → draining → exited | crashed. "busy" = a turn is
// open or an input was sent and has not been settled. Closing is EOF, "finish then exit" (fixture d2), with a kill
// after a grace period. How it ended is decided here: a signal, or an exit while busy, is a crash; exit code 1
// after an error result is a normal end (fixtures b5, f1). Spawning, EOF, kill and the exit report are actions the
// driver supplies with .provide().
import { assign, setup } from "xstate";

export interface WorkerProcessInput {
  generation: number;
}

export type WorkerProcessEvent =
  | { type: "SPAWNED" }
  /** An input was handed to the stdin writer. */
  | { type: "INPUT_SENT"; inputId: string }
  | { type: "INPUT_STARTED"; inputId: string }
  | { type: "INPUT_COMPLETED"; inputId: string }
  | { type: "TURN_STARTED" }
  | { type: "TURN_FINISHED" }
  /** Finish then exit: EOF on stdin. */
  | { type: "CLOSE" }
  /** Kill the process group now. */
  | { type: "KILL" }
  /** The process and its stdio are gone. */
  | { type: "EXITED"; code: number | null; signal: string | null };

/** How the process ended; each is its own edge into `exited` or `crashed`. */
export type WorkerExitCause = "exited" | "signal" | "exit_while_busy" | "never_spawned" | "killed_after_grace";

export interface WorkerProcessExit {
  generation: number;
  code: number | null;
  signal: string | null;
  crashed: boolean;
  cause: WorkerExitCause;
}

interface WorkerProcessContext {
  generation: number;
  turnOpen: boolean;
  /** Inputs sent and not settled; `started` ones are settled by the end of their turn. */
  inputs: ReadonlyArray<{ inputId: string; started: boolean }>;
  /** Recorded on the edge into a final state, reported by its entry. */
  exit: WorkerProcessExit | undefined;
}

const withoutInput = (context: WorkerProcessContext, inputId: string) =>
  context.inputs.filter((i) => i.inputId !== inputId);

const workerProcessSetup = setup({
  types: {
    context: {} as WorkerProcessContext,
    input: {} as WorkerProcessInput,
    events: {} as WorkerProcessEvent,
  },
  actions: {
    spawnProcess: (_, _params: { generation: number }) => {},
    endInput: () => {},
    killGroup: () => {},
    reportExit: (_, _params: WorkerProcessExit) => {},
    trackSent: assign({
      inputs: ({ context, event }) =>
        event.type === "INPUT_SENT"
          ? [...withoutInput(context, event.inputId), { inputId: event.inputId, started: false }]
          : context.inputs,
    }),
    trackStarted: assign({
      inputs: ({ context, event }) =>
        event.type === "INPUT_STARTED"
          ? context.inputs.map((i) => (i.inputId === event.inputId ? { ...i, started: true } : i))
          : context.inputs,
    }),
    trackCompleted: assign({
      inputs: ({ context, event }) =>
        event.type === "INPUT_COMPLETED" ? withoutInput(context, event.inputId) : context.inputs,
    }),
    openTurn: assign({ turnOpen: true }),
    // An interrupted input is reported `cancelled` only later, if at all: the end of its turn settles it.
    closeTurn: assign({ turnOpen: false, inputs: ({ context }) => context.inputs.filter((i) => !i.started) }),
    recordExit: assign(({ context, event }, params: { cause: WorkerExitCause }) => {
      const exit = event.type === "EXITED" ? event : { code: null, signal: null };
      const crashed = params.cause !== "exited";
      return { exit: { generation: context.generation, code: exit.code, signal: exit.signal, crashed, ...params } };
    }),
  },
  guards: {
    isBusy: ({ context }) => context.turnOpen || context.inputs.length > 0,
    isIdle: ({ context }) => !context.turnOpen && context.inputs.length === 0,
    bySignal: ({ event }) => event.type === "EXITED" && event.signal !== null,
    whileBusy: ({ context }) => context.turnOpen || context.inputs.length > 0,
  },
  delays: {
    /** How long a closing process may take to finish its turn before it is killed. */
    drainGrace: 30_000,
  },
});

/** Bookkeeping shared by every live state. */
const tracking = {
  INPUT_SENT: { actions: "trackSent" },
  INPUT_STARTED: { actions: "trackStarted" },
  INPUT_COMPLETED: { actions: "trackCompleted" },
  TURN_STARTED: { actions: "openTurn" },
  TURN_FINISHED: { actions: "closeTurn" },
  KILL: { actions: "killGroup" },
} as const;

const exitBy = (cause: WorkerExitCause) => ({ type: "recordExit" as const, params: { cause } });
const crashBySignal = { guard: "bySignal", target: "#workerProcess.crashed", actions: exitBy("signal") } as const;
const crashWhileBusy = {
  guard: "whileBusy",
  target: "#workerProcess.crashed",
  actions: exitBy("exit_while_busy"),
} as const;
const normalExit = { target: "#workerProcess.exited", actions: exitBy("exited") } as const;
const reportExit = {
  type: "reportExit",
  params: ({ context }: { context: WorkerProcessContext }) => context.exit!,
} as const;

export const workerProcessMachine = workerProcessSetup.createMachine({
  description:
    "One per OS process of a worker (the Claude Code CLI), numbered by its generation so late callbacks of a " +
    "replaced process are dropped. Busy while a turn is open or an input is unsettled. Closing is EOF — " +
    "finish, then exit — with a kill of the process group after a grace period. How the process ended is " +
    "decided once, each cause its own edge: an exit when idle (also code 1 after an error result) is a normal " +
    "end; a signal, an exit while busy, a process that never started, or a kill after the close grace is a " +
    "crash.",
  id: "workerProcess",
  context: ({ input }) => ({ generation: input.generation, turnOpen: false, inputs: [], exit: undefined }),
  initial: "spawning",
  states: {
    spawning: {
      entry: { type: "spawnProcess", params: ({ context }) => ({ generation: context.generation }) },
      on: {
        ...tracking,
        SPAWNED: [{ guard: "isBusy", target: "busy" }, { target: "ready" }],
        CLOSE: "draining",
        // Never started (e.g. the command does not exist): nothing was delivered, but nothing works either.
        EXITED: { target: "crashed", actions: exitBy("never_spawned") },
      },
    },
    ready: {
      always: { guard: "isBusy", target: "busy" },
      on: { ...tracking, CLOSE: "draining", EXITED: [crashBySignal, normalExit] },
    },
    busy: {
      always: { guard: "isIdle", target: "ready" },
      on: { ...tracking, CLOSE: "draining", EXITED: [crashBySignal, crashWhileBusy] },
    },
    draining: {
      entry: "endInput",
      initial: "finishing",
      on: { ...tracking, EXITED: [crashBySignal, crashWhileBusy, normalExit] },
      states: {
        finishing: { after: { drainGrace: "killed" } },
        /** The grace is over and the group was killed; the exit that follows is this kill's. */
        killed: {
          entry: "killGroup",
          on: {
            EXITED: { guard: "bySignal", target: "#workerProcess.crashed", actions: exitBy("killed_after_grace") },
          },
        },
      },
    },
    exited: { type: "final", entry: reportExit },
    crashed: { type: "final", entry: reportExit },
  },
  output: ({ context }) => context.exit!,
});
