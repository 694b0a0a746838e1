// The worker processes of one session, by generation, and the one place a process is started: the stored workdir
// is checked again first (aep/workdir.ts), and a refused start leaves no process but a reason that the input's
// delivery fails with. Each process gets the session's own HOME.
import { fromCallback } from "xstate";
import type { Logger } from "../log/logger.js";
import type { WorkerProcessInput } from "../machines/aep-session.js";
import type { Worker, WorkerEvent, WorkerFactory, WorkerStartOptions } from "../workers/types.js";

export interface WorkerProcessesOptions {
  sessionId: string;
  /** The worker family the session runs on (init.worker when it was created). */
  worker: string;
  factory: WorkerFactory;
  log: Logger;
  /** Per-start options the gateway fixes (permission mode). */
  workerOptions?: Pick<WorkerStartOptions, "permissionMode">;
  /** Why the stored workdir may no longer be used; undefined when it may. */
  checkWorkdir(workdir: string): string | undefined;
  /** The session's own HOME (created on demand). */
  home(): string;
}

export type WorkerReport = { type: "WORKER"; generation: number; event: WorkerEvent };

export class WorkerProcesses {
  private readonly live = new Map<number, Worker>();
  /** Generations whose start was refused, with the reason their delivery fails with. */
  private readonly refused = new Map<number, string>();

  constructor(private readonly o: WorkerProcessesOptions) {}

  get(generation: number): Worker | undefined {
    return this.live.get(generation);
  }

  /** Writes an input to the process of `generation`; rejects with why there is none. */
  async send(generation: number, input: { inputId: string; content: string }): Promise<void> {
    const worker = this.live.get(generation);
    if (!worker) throw new Error(this.refused.get(generation) ?? "the worker is gone");
    await worker.send(input);
  }

  killAll(): void {
    for (const worker of this.live.values()) worker.kill();
    this.live.clear();
  }

  /** The session machine's workerProcess child: starts the process, reports its events, kills it when stopped. */
  readonly actor = fromCallback<{ type: "NONE" }, WorkerProcessInput>(({ input, sendBack }) => {
    const report = (event: WorkerEvent) => sendBack({ type: "WORKER", generation: input.generation, event });
    const refusal = this.o.checkWorkdir(input.workdir);
    if (refusal) {
      this.refused.set(input.generation, refusal);
      this.o.log.warn("aep worker start refused", { session_id: this.o.sessionId, reason: refusal });
      // No process: the session forgets this generation once the delivery has failed with the reason.
      queueMicrotask(() => report({ type: "worker.exited", code: null, signal: null, crashed: false }));
      return () => this.refused.delete(input.generation);
    }
    let exited = false;
    const worker = this.o.factory.start(
      {
        worker: this.o.worker,
        workdir: input.workdir,
        home: this.o.home(),
        workerSessionId: input.workerSessionId,
        resume: input.resume,
        ...this.o.workerOptions,
      },
      (event) => {
        if (event.type === "worker.exited") exited = true;
        report(event);
      },
    );
    this.live.set(input.generation, worker);
    this.o.log.info("aep worker started", {
      session_id: this.o.sessionId,
      generation: input.generation,
      resume: input.resume,
    });
    return () => {
      this.live.delete(input.generation);
      if (!exited) worker.kill();
    };
  });
}
