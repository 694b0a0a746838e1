// A WorkerFactory whose workers the test drives by hand: what a driver would report is emitted explicitly. Only for
// unit tests of the session core; the end-to-end tests run the real CLI.
import type {
  InteractionAnswer,
  Worker,
  WorkerEvent,
  WorkerFactory,
  WorkerListener,
  WorkerStartOptions,
} from "../../workers/types.js";

export class ScriptedWorker implements Worker {
  readonly inputs: Array<{ inputId: string; content: string }> = [];
  readonly answers: Array<{ id: string; answer: InteractionAnswer }> = [];
  interrupts = 0;
  killed = false;
  exited = false;
  /** What interrupt() resolves: acknowledged or not. */
  interruptAcks = true;
  /** When set, send() rejects with it (the write failed). */
  failSend: Error | undefined;
  private inputWaiters: Array<() => void> = [];

  constructor(
    readonly generation: number,
    readonly options: WorkerStartOptions,
    private readonly listener: WorkerListener,
  ) {}

  emit(...events: WorkerEvent[]): void {
    for (const event of events) {
      if (event.type === "worker.exited") this.exited = true;
      this.listener(event, this.generation);
    }
  }

  /** The usual opening of a turn for the input last sent. */
  beginTurn(inputId = this.inputs.at(-1)!.inputId): void {
    this.emit(
      { type: "input.queued", inputId },
      { type: "turn.started", inputId },
      { type: "input.started", inputId, mode: "turn" },
    );
  }

  async send(input: { inputId: string; content: string }): Promise<void> {
    if (this.failSend) throw this.failSend;
    this.inputs.push(input);
    for (const w of this.inputWaiters.splice(0)) w();
  }

  /** Resolves once the worker holds `count` inputs. */
  async received(count: number): Promise<void> {
    while (this.inputs.length < count) await new Promise<void>((resolve) => this.inputWaiters.push(resolve));
  }

  async answer(interactionId: string, answer: InteractionAnswer): Promise<void> {
    this.answers.push({ id: interactionId, answer });
  }

  async interrupt(): Promise<boolean> {
    this.interrupts += 1;
    return this.interruptAcks;
  }

  async close(): Promise<void> {
    if (!this.exited) this.emit({ type: "worker.exited", code: 0, signal: null, crashed: false });
  }

  kill(): void {
    this.killed = true;
    if (!this.exited) this.emit({ type: "worker.exited", code: null, signal: "SIGKILL", crashed: true });
  }
}

export class ScriptedFactory implements WorkerFactory {
  readonly workers: ScriptedWorker[] = [];
  /** Given to every worker started from now on: their send() rejects with it. */
  failSend: Error | undefined;
  /** Given to every worker started from now on: what their interrupt() resolves. */
  interruptAcks = true;
  private waiters: Array<() => void> = [];

  start(options: WorkerStartOptions, listener: WorkerListener): Worker {
    const worker = new ScriptedWorker(this.workers.length + 1, options, listener);
    worker.failSend = this.failSend;
    worker.interruptAcks = this.interruptAcks;
    this.workers.push(worker);
    for (const w of this.waiters.splice(0)) w();
    return worker;
  }

  get last(): ScriptedWorker {
    return this.workers.at(-1)!;
  }

  async started(count: number): Promise<ScriptedWorker> {
    while (this.workers.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.workers[count - 1]!;
  }
}
