// One live AEP session: its machine, its sequencer and the side effects the machines ask for (ledger, worker
// processes, the attached connection). Inputs are admitted through one ordered chain: the ledger row is written and
// input.ack(accepted) announced before the machine — and so the worker — sees the input.
import { createHash, randomUUID } from "node:crypto";
import { createActor, fromCallback, fromPromise, type Actor, type ActorRefFrom } from "xstate";
import type { Logger } from "../log/logger.js";
import { aepInteractionMachine } from "../machines/aep-interaction.js";
import { aepSessionMachine, type SessionControl, type WorkerProcessInput } from "../machines/aep-session.js";
import { aepTurnMachine } from "../machines/aep-turn.js";
import type { TurnEnd } from "../machines/aep-turn-ends.js";
import type { AepSessionRecord, AepStore } from "../store/index.js";
import type { InteractionAnswer, Worker, WorkerFactory, WorkerStartOptions } from "../workers/types.js";
import type { ClientEnvelope, ErrorCode, ServerEnvelope, ServerEvent, SessionState } from "./wire/envelope.js";
import { Sequencer, type Outlet } from "./wire/sequencer.js";

export interface SessionDeps {
  store: AepStore;
  factory: WorkerFactory;
  /** Per-start worker options the gateway fixes (the factory holds the configured command, args, env). */
  workerOptions?: Pick<WorkerStartOptions, "permissionMode" | "home">;
  log: Logger;
  /** Resolves and checks a client-chosen working directory (init or cd); throws a message for the client. */
  resolveWorkdir(requested: string): Promise<string>;
  /** The session deleted itself (control delete): drop it from the registry. */
  onForget(sessionId: string): void;
}

/** What a session needs of the connection it is attached to. */
export interface SessionLink extends Outlet {
  /** Called before anything is offered, so the connection numbers envelopes with this session's sequencer. */
  bind(session: AepSession): void;
  close(code: number, reason: string): void;
}

export class AepSession {
  readonly sessionId: string;
  readonly sessionKey: string | undefined;
  /** The worker family this session runs on (init.worker when it was created). */
  private readonly workerKind: string;
  private readonly sequencer: Sequencer;
  private readonly actor: Actor<typeof aepSessionMachine>;
  private readonly workers = new Map<number, Worker>();
  private link: SessionLink | undefined;
  /** Shut down with the gateway: nothing more is written (the store is about to close). */
  private closed = false;
  private admissions: Promise<void> = Promise.resolve();
  /** Store writes in flight, so close() can wait for them before the store goes away. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    record: AepSessionRecord,
    private readonly deps: SessionDeps,
  ) {
    this.sessionId = record.sessionId;
    this.sessionKey = record.sessionKey;
    this.workerKind = record.worker;
    const log = deps.log;
    this.sequencer = new Sequencer({
      sessionId: record.sessionId,
      lastSeq: record.lastSeq,
      onViolation: (message, event) =>
        log.error("aep ordering invariant refused an event", {
          session_id: this.sessionId,
          kind: event.type,
          violation: message,
        }),
      onOverflow: () => this.link?.close(4008, "client too slow: outbound queue full"),
      onReserve: (mark) => {
        if (!this.closed) this.persist({ lastSeq: mark });
      },
    });
    this.actor = createActor(this.machine(), {
      input: {
        sessionId: record.sessionId,
        workdir: record.workdir,
        workerSessionId: record.workerSessionId,
        workerStarted: record.workerStarted,
      },
    });
    this.actor.subscribe({
      // The machine (and with it the worker) is stopped: the client is told and disconnected, and the registry lets
      // go of this object, so the next init reopens the session from the store.
      error: (err) => {
        log.error("aep session machine failed", { session_id: this.sessionId, error: err });
        this.sendError("INTERNAL_ERROR", "byok-gateway internal error; init again to reopen the session");
        this.link?.close(1011, "internal error");
        deps.onForget(this.sessionId);
      },
    });
    this.actor.start();
  }

  get attached(): boolean {
    return this.link !== undefined;
  }

  get state(): SessionState {
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status === "done") return "terminated";
    return snapshot.matches("busy") ? "running" : "idle";
  }

  /** Attaches a connection and tells it where the session stands (`created` only for a brand-new session). */
  attach(link: SessionLink, created: boolean): void {
    this.link = link;
    link.bind(this);
    this.sequencer.attach(link);
    this.sequencer.announce(
      created ? "created" : this.state === "terminated" ? "terminated" : "idle",
      this.openRequests(),
    );
  }

  /** Ids of the running turn's interactions still waiting for the client. */
  private openRequests(): string[] {
    const turn = this.actor.getSnapshot().children.turn as ActorRefFrom<typeof aepTurnMachine> | undefined;
    return turn ? Object.keys(turn.getSnapshot().context.interactions) : [];
  }

  detach(link: SessionLink): void {
    if (this.link !== link) return;
    this.link = undefined;
    this.sequencer.detach(link);
  }

  /** Called by the attached connection's queue as it hands an event to the socket. */
  commit(event: ServerEvent): ServerEnvelope {
    return this.sequencer.commit(event);
  }

  /** A client error outside any turn (bad frame, unknown request id…). */
  sendError(code: ErrorCode, message: string): void {
    this.emit({ type: "error", data: { code, message } });
  }

  handle(envelope: ClientEnvelope): void {
    const event = envelope.event;
    // A terminated session's machine is gone: say so instead of dropping the frame (input says it in its ack chain).
    if (this.state === "terminated" && event.type !== "input")
      return this.sendError(
        "SESSION_TERMINATED",
        "this session was terminated; init with its session_key to open it again",
      );
    switch (event.type) {
      case "input":
        return this.admit(envelope.id, event.data);
      case "permission_response":
        return this.answer(event.data.id, {
          kind: "permission",
          allowed: event.data.allowed,
          ...(event.data.reason ? { reason: event.data.reason } : {}),
        });
      case "question_response":
        return this.answer(event.data.id, { kind: "question", answers: event.data.answers });
      case "elicitation_response":
        return this.answer(event.data.id, {
          kind: "elicitation",
          action: event.data.action,
          ...(event.data.content ? { content: event.data.content } : {}),
        });
      case "control":
        // Behind the inputs before it: a stop sent right after its input must find that input's turn.
        this.admissions = this.admissions.then(() => this.control(event.data));
        return;
      default:
        return this.sendError("PROTOCOL_VIOLATION", `${event.type} is not expected here`);
    }
  }

  /** Gateway shutdown: the worker goes with the session; the stored facts stay. */
  async close(): Promise<void> {
    this.closed = true;
    const state = this.state === "terminated" ? "terminated" : "idle";
    this.actor.stop();
    for (const worker of this.workers.values()) worker.kill();
    this.workers.clear();
    await this.admissions;
    await this.writes;
    await this.deps.store
      .updateSession(this.sessionId, { lastSeq: this.sequencer.lastSeq, state })
      .catch((err: unknown) =>
        this.deps.log.error("aep session not persisted", { session_id: this.sessionId, error: err }),
      );
  }

  private emit(event: ServerEvent, executionId?: string): void {
    this.sequencer.emit(event, executionId);
  }

  private answer(id: string, answer: InteractionAnswer): void {
    this.actor.send({ type: "ANSWER", id, answer });
  }

  private async control(data: Extract<ClientEnvelope["event"], { type: "control" }>["data"]): Promise<void> {
    if (data.action === "stop") return this.actor.send({ type: "STOP" });
    if (data.action !== "cd") return this.actor.send({ type: "CONTROL", control: { action: data.action } });
    if (!data.workdir) return this.sendError("INVALID_MESSAGE", "control cd needs data.workdir");
    await this.deps.resolveWorkdir(data.workdir).then(
      (workdir) => this.actor.send({ type: "CONTROL", control: { action: "cd", workdir } satisfies SessionControl }),
      (err: unknown) => this.sendError("INVALID_MESSAGE", (err as Error).message),
    );
  }

  private admit(clientMessageId: string, data: { content: string; metadata?: Record<string, unknown> }): void {
    this.admissions = this.admissions
      .then(() => this.admitInput(clientMessageId, data))
      .catch((err: unknown) => {
        this.deps.log.error("aep input admission failed", { session_id: this.sessionId, error: err });
        this.sendError("INTERNAL_ERROR", "the input could not be recorded; retry with the same id");
      });
  }

  private async admitInput(
    clientMessageId: string,
    data: { content: string; metadata?: Record<string, unknown> },
  ): Promise<void> {
    if (this.state === "terminated") return this.sendError("SESSION_TERMINATED", "this session was terminated");
    const payloadHash = createHash("sha256").update(JSON.stringify(data)).digest("hex");
    const executionId = `exec_${randomUUID()}`;
    const { store } = this.deps;
    const result = await store.recordInput({ sessionId: this.sessionId, clientMessageId, executionId, payloadHash });
    if (!result.recorded) {
      const existing = result.existing;
      if (existing.payloadHash !== payloadHash)
        return this.sendError(
          "INVALID_MESSAGE",
          `input id ${clientMessageId} was already used with a different payload`,
        );
      const errorCode = existing.errorCode as ErrorCode | undefined;
      return this.emit({
        type: "input.ack",
        data: {
          client_message_id: clientMessageId,
          execution_id: existing.executionId,
          status: existing.deliveryStatus,
          duplicate: true,
          ...(errorCode ? { error_code: errorCode } : {}),
        },
      });
    }
    this.emit({
      type: "input.ack",
      data: { client_message_id: clientMessageId, execution_id: executionId, status: "accepted" },
    });
    if (this.state !== "idle") {
      const code: ErrorCode = this.state === "running" ? "SESSION_BUSY" : "SESSION_TERMINATED";
      await store.setDelivery(executionId, "failed", code);
      return this.emit({
        type: "input.ack",
        data: { client_message_id: clientMessageId, execution_id: executionId, status: "failed", error_code: code },
      });
    }
    this.actor.send({ type: "INPUT", executionId, clientMessageId, content: data.content });
  }

  private persist(update: Parameters<AepStore["updateSession"]>[1]): void {
    this.track(
      this.deps.store
        .updateSession(this.sessionId, update)
        .catch((err: unknown) =>
          this.deps.log.error("aep session not persisted", { session_id: this.sessionId, error: err }),
        ),
    );
  }

  /** Runs after a durable write; a failed write is logged and the announcement withheld (docs/protocol/aep.md §8.1). */
  private afterWrite(write: Promise<void>, announce: () => void): void {
    this.track(
      write.then(announce, (err: unknown) =>
        this.deps.log.error("aep ledger write failed", { session_id: this.sessionId, error: err }),
      ),
    );
  }

  private track(work: Promise<unknown>): void {
    this.writes = Promise.all([this.writes, work]);
  }

  private machine() {
    const { store, factory, log } = this.deps;
    const rejectAnswer = (_: unknown, { id }: { id: string }) =>
      this.sendError("INVALID_MESSAGE", `no open request with id ${id}`);
    const turn = aepTurnMachine.provide({
      actors: {
        deliver: fromPromise(
          async ({ input }: { input: { executionId: string; content: string; generation: number } }) => {
            // Either way the ledger holds the delivery fact before the turn announces it.
            try {
              const worker = this.workers.get(input.generation);
              if (!worker) throw new Error("the worker is gone");
              await worker.send({ inputId: input.executionId, content: input.content });
            } catch (err) {
              await store.setDelivery(input.executionId, "failed", "WORKER_START_FAILED");
              throw err;
            }
            await store.setDelivery(input.executionId, "delivered");
          },
        ),
        interrupt: fromPromise(
          async ({ input }: { input: { generation: number } }) =>
            (await this.workers.get(input.generation)?.interrupt()) ?? false,
        ),
        interaction: aepInteractionMachine.provide({
          actions: {
            sendAnswer: (_, { id, generation, answer }) => {
              this.workers
                .get(generation)
                ?.answer(id, answer)
                .catch((err: unknown) =>
                  log.warn("aep answer not written", { session_id: this.sessionId, error: err }),
                );
            },
          },
        }),
      },
      actions: {
        emit: (_, { event, executionId }) => this.emit(event, executionId),
        ack: (_, { executionId, clientMessageId, status, errorCode }) =>
          this.emit({
            type: "input.ack",
            data: {
              client_message_id: clientMessageId,
              execution_id: executionId,
              status,
              ...(errorCode ? { error_code: errorCode } : {}),
            },
          }),
        recordStarted: (_, { executionId }) => this.afterWrite(store.setRuntime(executionId, "started"), () => {}),
        settleRuntime: (_, { executionId, end }) => this.settleRuntime(executionId, end),
        killWorker: (_, { generation }) => this.workers.get(generation)?.kill(),
        rejectAnswer,
      },
    });
    return aepSessionMachine.provide({
      actors: {
        turn,
        workerProcess: fromCallback<{ type: "NONE" }, WorkerProcessInput>(({ input, sendBack }) => {
          let exited = false;
          const worker = factory.start(
            {
              worker: this.workerKind,
              workdir: input.workdir,
              workerSessionId: input.workerSessionId,
              resume: input.resume,
              ...this.deps.workerOptions,
            },
            (event) => {
              if (event.type === "worker.exited") exited = true;
              sendBack({ type: "WORKER", generation: input.generation, event });
            },
          );
          this.workers.set(input.generation, worker);
          log.info("aep worker started", {
            session_id: this.sessionId,
            generation: input.generation,
            resume: input.resume,
          });
          return () => {
            this.workers.delete(input.generation);
            if (!exited) worker.kill();
          };
        }),
      },
      actions: {
        emit: (_, { event }) => this.emit(event),
        persist: (_, { workdir, workerSessionId, workerStarted, state }) =>
          this.persist({ workdir, workerSessionId, workerStarted, state }),
        forget: () => {
          this.afterWrite(store.deleteSession(this.sessionId), () => {});
          this.deps.onForget(this.sessionId);
          this.link?.close(1000, "session deleted");
        },
        denyStray: (_, { generation, id }) => {
          this.workers
            .get(generation)
            ?.answer(id, { kind: "permission", allowed: false, reason: "no turn is running" })
            .catch(() => {});
        },
        rejectAnswer,
      },
    });
  }

  private settleRuntime(executionId: string, end: TurnEnd): void {
    const failed = end.outcome === "failed";
    const code = failed ? end.code : undefined;
    this.deps.log.info("aep turn done", {
      session_id: this.sessionId,
      execution_id: executionId,
      outcome: end.outcome,
      cause: end.cause,
    });
    this.afterWrite(this.deps.store.setRuntime(executionId, failed ? "failed" : "completed", code), () =>
      this.emit({
        type: failed ? "runtime.execution.failed" : "runtime.execution.completed",
        data: {
          execution_id: executionId,
          status: failed ? "failed" : "completed",
          finished_at: Date.now(),
          ...(code ? { error_code: code } : {}),
        },
      }),
    );
  }
}
