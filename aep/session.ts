// One live AEP session: its machine, its sequencer and the side effects the machines ask for (ledger, worker
// processes, the attached connection). Inputs are admitted through one ordered chain: the ledger row is written and
// input.ack(accepted) announced before the machine — and so the worker — sees the input.
import { createActor, type Actor, type ActorRefFrom } from "xstate";
import { redact, type Logger } from "../log/logger.js";
import { aepSessionMachine, type SessionControl } from "../machines/aep-session.js";
import type { aepTurnMachine } from "../machines/aep-turn.js";
import type { TurnEnd } from "../machines/aep-turn-ends.js";
import type { AepSessionRecord, AepStore, EventLogBounds } from "../store/index.js";
import type { InteractionAnswer, WorkerEvent, WorkerFactory, WorkerStartOptions } from "../workers/types.js";
import type {
  ClientEnvelope,
  ErrorCause,
  ErrorCode,
  ServerEnvelope,
  ServerEvent,
  SessionState,
} from "./wire/envelope.js";
import { initialMapping, isReport, mapContent } from "./wire/mapping.js";
import { Sequencer, type Outlet } from "./wire/sequencer.js";
import { WorkerProcesses } from "./worker-processes.js";
import { provideTurn } from "./turn-wiring.js";
import { logTurnEnd, recordInput, runtimeFact } from "./input-ledger.js";
import { DEFAULT_EVENT_LOG, MAX_REPLAY, SessionEventLog } from "./event-log.js";

export interface SessionDeps {
  store: AepStore;
  factory: WorkerFactory;
  /** Per-start worker options the gateway fixes (the factory holds the configured command, args, env). */
  workerOptions?: Pick<WorkerStartOptions, "permissionMode">;
  /** Why a stored workdir may no longer be used (aep/workdir.ts); checked at every worker start. */
  checkWorkdir(workdir: string): string | undefined;
  /** The session's own HOME under the data dir (aep/workdir.ts homeFor). */
  homeFor(sessionId: string): string;
  log: Logger;
  /** Resolves and checks a client-chosen working directory (init or cd); throws a message for the client. */
  resolveWorkdir(requested: string): Promise<string>;
  /** Bounds of the durable event log (aep.eventLog); DEFAULT_EVENT_LOG otherwise. */
  eventLog?: EventLogBounds;
  /** A turn running longer than this ends TURN_TIMEOUT (aep.turnTimeoutMs; the machine's default otherwise). */
  turnTimeoutMs?: number;
  /** The session deleted itself (control delete): drop it from the registry. */
  onForget(sessionId: string): void;
}

/** What a session needs of the connection it is attached to. */
export interface SessionLink extends Outlet {
  /** Called before anything is offered, so the connection numbers envelopes with this session's sequencer. */
  bind(session: AepSession): void;
  /** A logged envelope (its seq already given) for a re-attaching client, ahead of live events. */
  replay(text: string): void;
  close(code: number, reason: string): void;
  /** Tells the client (error RECONNECT_REQUIRED, seq 0) to init again with its last seq, and closes. */
  reconnectRequired(message: string): void;
}

export class AepSession {
  readonly sessionId: string;
  readonly sessionKey: string | undefined;
  /** The digest of the token that owns it (registry.ts binds a session_key to it). */
  owner: string | undefined;
  readonly worker: string;
  private readonly sequencer: Sequencer;
  private readonly actor: Actor<typeof aepSessionMachine>;
  private readonly workers: WorkerProcesses;
  private readonly events: SessionEventLog;
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
    this.owner = record.owner;
    this.events = new SessionEventLog({
      sessionId: record.sessionId,
      store: deps.store,
      bounds: deps.eventLog ?? DEFAULT_EVENT_LOG,
      log: deps.log,
    });
    this.workers = new WorkerProcesses({
      sessionId: record.sessionId,
      factory: deps.factory,
      log: deps.log,
      ...(deps.workerOptions ? { workerOptions: deps.workerOptions } : {}),
      checkWorkdir: deps.checkWorkdir,
      home: () => deps.homeFor(record.sessionId),
      worker: record.worker,
    });
    this.worker = record.worker;
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
      onOverflow: () => this.link?.reconnectRequired("client too slow: outbound queue full; init again with last_seq"),
      onReserve: (mark) => {
        if (!this.closed) this.persist({ lastSeq: mark });
      },
      onLogged: (envelope) => {
        if (!this.closed) this.events.append(envelope);
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

  /**
   * Attaches a connection and tells it where the session stands (`created` only for a brand-new session). With
   * `lastSeq` (init data.last_seq) the client first gets every logged event after it, in order, with its own seq.
   */
  async attach(link: SessionLink, created: boolean, lastSeq?: number): Promise<void> {
    this.link = link;
    link.bind(this);
    if (lastSeq === undefined || created) this.sequencer.attach(link);
    else if (!(await this.replay(link, lastSeq))) return;
    this.sequencer.announce(
      created ? "created" : this.state === "terminated" ? "terminated" : "idle",
      this.openRequests(),
    );
  }

  /** Sends what the client missed; false when the connection went away meanwhile or must re-attach for the rest. */
  private async replay(link: SessionLink, lastSeq: number): Promise<boolean> {
    this.sequencer.beginReplay();
    const replay = await this.events.replayAfter(lastSeq).catch(() => undefined);
    if (this.link !== link) {
      this.sequencer.cancelReplay();
      return false;
    }
    for (const text of replay?.texts ?? []) link.replay(text);
    const upTo = replay?.lastSeq ?? lastSeq;
    for (const envelope of this.sequencer.finishReplay(link))
      if (envelope.seq > upTo) link.replay(redact(JSON.stringify(envelope)));
    if (!replay?.truncated) return true;
    link.reconnectRequired(`more than ${MAX_REPLAY} events were missed; init again with last_seq ${upTo}`);
    return false;
  }

  /** Ids of the running turn's interactions still waiting for the client. */
  private openRequests(): string[] {
    const turn = this.actor.getSnapshot().children.turn as ActorRefFrom<typeof aepTurnMachine> | undefined;
    return turn ? Object.keys(turn.getSnapshot().context.interactions) : [];
  }

  /** `unsent`: what the connection's queue never handed to the socket; its kept events go to the log. */
  detach(link: SessionLink, unsent: readonly ServerEvent[] = []): void {
    if (this.link !== link) return;
    this.link = undefined;
    this.sequencer.detach(link, unsent);
  }

  /** Called by the attached connection's queue as it hands an event to the socket. */
  commit(event: ServerEvent): ServerEnvelope {
    return this.sequencer.commit(event);
  }

  /** A client error outside any turn (bad frame, unknown request id…), tied to what caused it. */
  sendError(code: ErrorCode, message: string, cause: ErrorCause = {}): void {
    this.emit({ type: "error", data: { code, message, ...cause } });
  }

  handle(envelope: ClientEnvelope): void {
    const event = envelope.event;
    const cause = { client_message_id: envelope.id };
    // A terminated session's machine is gone: say so instead of dropping the frame (input says it in its ack chain).
    if (this.state === "terminated" && event.type !== "input")
      return this.sendError(
        "SESSION_TERMINATED",
        "this session was terminated; init with its session_key to open it again",
        cause,
      );
    switch (event.type) {
      case "input":
        return this.admit(envelope.id, event.data);
      case "permission_response":
        return this.answer(envelope.id, event.data.id, {
          kind: "permission",
          allowed: event.data.allowed,
          ...(event.data.reason ? { reason: event.data.reason } : {}),
        });
      case "question_response":
        return this.answer(envelope.id, event.data.id, { kind: "question", answers: event.data.answers });
      case "elicitation_response":
        return this.answer(envelope.id, event.data.id, {
          kind: "elicitation",
          action: event.data.action,
          ...(event.data.content ? { content: event.data.content } : {}),
        });
      case "worker_command":
        return void this.workerCommand(envelope.id, event.data.command);
      case "control":
        // Behind the inputs before it: a stop sent right after its input must find that input's turn.
        this.admissions = this.admissions.then(() => this.control(envelope.id, event.data));
        return;
      default:
        return this.sendError("PROTOCOL_VIOLATION", `${event.type} is not expected here`, cause);
    }
  }

  /** Gateway shutdown: the worker goes with the session; the stored facts stay. */
  async close(): Promise<void> {
    this.closed = true;
    const state = this.state === "terminated" ? "terminated" : "idle";
    this.actor.stop();
    this.workers.killAll();
    await this.admissions;
    await this.writes;
    await this.events.settled();
    await this.deps.store
      .updateSession(this.sessionId, { lastSeq: this.sequencer.lastSeq, state })
      .catch((err: unknown) =>
        this.deps.log.error("aep session not persisted", { session_id: this.sessionId, error: err }),
      );
  }

  private emit(event: ServerEvent, executionId?: string): void {
    this.sequencer.emit(event, executionId);
  }

  /** A worker_command is answered by the running worker process; its report goes out as its AEP kind. */
  private async workerCommand(clientMessageId: string, command: string): Promise<void> {
    const cause = { client_message_id: clientMessageId };
    const { generation, workerAlive } = this.actor.getSnapshot().context;
    const worker = workerAlive ? this.workers.get(generation) : undefined;
    if (!worker)
      return this.sendError("INVALID_MESSAGE", "no worker process is running yet; send an input first", cause);
    if (!worker.command) return this.sendError("NOT_SUPPORTED", "this worker answers no worker_command", cause);
    const events = await worker.command(command).catch((err: unknown): WorkerEvent[] => {
      this.sendError("INTERNAL_ERROR", (err as Error).message, cause);
      return [];
    });
    if (!events) return this.sendError("NOT_SUPPORTED", `the worker does not answer ${command}`, cause);
    for (const event of events.filter(isReport))
      for (const out of mapContent(initialMapping, event).events) this.emit(out);
  }

  private answer(clientMessageId: string, id: string, answer: InteractionAnswer): void {
    this.actor.send({ type: "ANSWER", id, answer, clientMessageId });
  }

  private async control(
    clientMessageId: string,
    data: Extract<ClientEnvelope["event"], { type: "control" }>["data"],
  ): Promise<void> {
    const cause = { client_message_id: clientMessageId };
    if (data.action === "stop") return this.actor.send({ type: "STOP" });
    if (data.action !== "cd") return this.actor.send({ type: "CONTROL", control: { action: data.action } });
    if (!data.workdir) return this.sendError("INVALID_MESSAGE", "control cd needs data.workdir", cause);
    await this.deps.resolveWorkdir(data.workdir).then(
      (workdir) => this.actor.send({ type: "CONTROL", control: { action: "cd", workdir } satisfies SessionControl }),
      (err: unknown) => this.sendError("INVALID_MESSAGE", (err as Error).message, cause),
    );
  }

  private admit(clientMessageId: string, data: { content: string; metadata?: Record<string, unknown> }): void {
    this.admissions = this.admissions
      .then(() => this.admitInput(clientMessageId, data))
      .catch((err: unknown) => {
        this.deps.log.error("aep input admission failed", { session_id: this.sessionId, error: err });
        this.sendError("INTERNAL_ERROR", "the input could not be recorded; retry with the same id", {
          client_message_id: clientMessageId,
        });
      });
  }

  private async admitInput(
    clientMessageId: string,
    data: { content: string; metadata?: Record<string, unknown> },
  ): Promise<void> {
    const executionId = await recordInput(
      {
        store: this.deps.store,
        sessionId: this.sessionId,
        state: () => this.state,
        emit: (event) => this.emit(event),
        sendError: (code, message, cause) => this.sendError(code, message, cause),
      },
      clientMessageId,
      data,
    );
    if (executionId) this.actor.send({ type: "INPUT", executionId, clientMessageId, content: data.content });
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
    const { store, log } = this.deps;
    const rejectAnswer = (_: unknown, { id, clientMessageId }: { id: string; clientMessageId?: string | undefined }) =>
      this.sendError(
        "INVALID_MESSAGE",
        `no open request with id ${id}`,
        clientMessageId ? { client_message_id: clientMessageId } : {},
      );
    const turn = provideTurn({
      sessionId: this.sessionId,
      store,
      log,
      workers: this.workers,
      emit: (event, executionId) => this.emit(event, executionId),
      afterWrite: (write) => this.afterWrite(write, () => {}),
      settleRuntime: (executionId, end) => this.settleRuntime(executionId, end),
      rejectAnswer,
      ...(this.deps.turnTimeoutMs ? { turnTimeoutMs: this.deps.turnTimeoutMs } : {}),
    });
    return aepSessionMachine.provide({
      actors: {
        turn,
        workerProcess: this.workers.actor,
      },
      actions: {
        emit: (_, { event }) => this.emit(event),
        persist: (_, { workdir, workerSessionId, workerStarted, state }) =>
          this.persist({ workdir, workerSessionId, workerStarted, state }),
        forget: () => {
          // Nothing is logged any more, and what waits to be is not: the row, and with it the log, goes.
          this.closed = true;
          this.events.discard();
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
    const { store, log } = this.deps;
    logTurnEnd(log, this.sessionId, executionId, end);
    const fact = runtimeFact(executionId, end);
    this.afterWrite(store.setRuntime(executionId, fact.data.status, fact.data.error_code), () => this.emit(fact));
  }
}
