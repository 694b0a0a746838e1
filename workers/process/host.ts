// The OS-process half every worker driver shares: the WorkerProcess machine's actor, the process group it signals,
// the first-wins exit and the promise close() returns. A driver supplies how to spawn, how to end the process's
// input and what to report when it has exited; its own wire stays in the driver.
import type { ChildProcess } from "node:child_process";
import { type Actor, createActor } from "xstate";
import {
  type WorkerProcessEvent,
  type WorkerProcessExit,
  workerProcessMachine,
} from "../../machines/worker-process.js";
import type { WorkerEvent } from "../types.js";

export interface ProcessHostHooks {
  /** Starts the process (detached: its own group); undefined when it cannot even be spawned. */
  spawn(): ChildProcess | undefined;
  /** Finish then exit: EOF on the process's input. */
  endInput(): void;
  /** The machine judged the exit; withdraw what is open and emit `worker.exited`. */
  reportExit(exit: WorkerProcessExit): void;
}

export class WorkerProcessHost {
  private readonly actor: Actor<typeof workerProcessMachine>;
  private child: ChildProcess | undefined;
  private gone = false;
  /** Settles once the exit was reported. */
  readonly exited: Promise<void>;
  private markExited!: () => void;

  constructor(generation: number, closeGraceMs: number, hooks: ProcessHostHooks) {
    this.exited = new Promise((resolve) => {
      this.markExited = resolve;
    });
    this.actor = createActor(
      workerProcessMachine.provide({
        actions: {
          spawnProcess: () => {
            this.child = hooks.spawn();
          },
          endInput: () => hooks.endInput(),
          killGroup: () => this.signalGroup("SIGKILL"),
          reportExit: (_, exit) => {
            hooks.reportExit(exit);
            this.markExited();
          },
        },
        delays: { drainGrace: closeGraceMs },
      }),
      { input: { generation } },
    );
  }

  /** Spawns the process (the machine's entry); call once the driver is fully constructed. */
  start(): void {
    this.actor.start();
  }

  send(event: WorkerProcessEvent): void {
    this.actor.send(event);
  }

  /** Keeps the machine's notion of "busy" in step with what the driver emits. */
  track(event: WorkerEvent): void {
    const tracked = trackingEventOf(event);
    if (tracked) this.actor.send(tracked);
  }

  close(): Promise<void> {
    this.actor.send({ type: "CLOSE" });
    return this.exited;
  }

  kill(): void {
    this.actor.send({ type: "KILL" });
  }

  /** The exit was judged (a final state). */
  get finished(): boolean {
    return this.actor.getSnapshot().status === "done";
  }

  /** Closing or gone: no new input is taken. */
  get closing(): boolean {
    return this.finished || this.actor.getSnapshot().matches("draining");
  }

  /** The process and its stdio are gone (`close`, or a spawn that failed). Only the first call counts: false after. */
  processGone(code: number | null, signal: string | null): boolean {
    if (this.gone) return false;
    this.gone = true;
    this.actor.send({ type: "EXITED", code, signal });
    return true;
  }

  /** The whole group, even after the leader exited: a tool's child holding stdout open would delay `close`. */
  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined || this.gone) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: nobody is left in the group.
    }
  }
}

/** The WorkerProcess bookkeeping a mapped event implies (the machine's notion of "busy"). */
export function trackingEventOf(event: WorkerEvent): WorkerProcessEvent | undefined {
  switch (event.type) {
    case "turn.started":
      return { type: "TURN_STARTED" };
    case "turn.finished":
      return { type: "TURN_FINISHED" };
    case "input.started":
      return { type: "INPUT_STARTED", inputId: event.inputId };
    case "input.completed":
      return { type: "INPUT_COMPLETED", inputId: event.inputId };
    default:
      return undefined;
  }
}
