// A scripted Cursor client for wire-level end-to-end tests. It opens RunSSE and sends BidiAppend exactly as the
// editor does, keeps the client's blob store, answers KV and Exec requests automatically (from an in-memory
// workspace and a scripted shell), and records everything it saw so tests can assert the wire, in order.
import { randomUUID } from "node:crypto";
import type {
  AgentClientMessage,
  AgentServerMessage,
  ConversationStateStructure,
  InteractionQuery,
} from "../../proto/gen/agent/v1/agent_pb.js";
import {
  answerExecRequest,
  answerKv,
  answerQuery,
  type ResponderContext,
  type RunHooks,
  sha256Hex,
  type Violation,
} from "./client-responder.js";
import { createWorkspace, type ShellScript, unscriptedShell, type Workspace } from "./client-workspace.js";
import { type AppendResponse, openRunSse, postBidiAppend, type RunSseConnection } from "./connect-wire.js";
import {
  blobClosure,
  blobHex,
  frameKind,
  frameKinds,
  type FrameKindOptions,
  type ObservedFrame,
  type RunEnd,
} from "./observed-frames.js";
import { buildRunRequest, clientMessage, type RunStart } from "./run-start.js";
import { sleep, waitUntil } from "./util.js";

export type { ExecPlan, KvPlan, RunHooks, Violation } from "./client-responder.js";

export interface AppendRecord {
  seqno: bigint;
  message: AgentClientMessage;
  /** Position on the run's timeline (shared with frames' `at`) when the request body was sent. */
  sentAt?: number;
  response?: AppendResponse;
}

export interface HeldAppend {
  /** The seqno the held append was given, once the client produced it. */
  seqno(): Promise<bigint>;
  release(): Promise<AppendResponse>;
}

export class CursorClient {
  /** The client's blob store: hex blob id → bytes (docs/protocol/cursor-run.md §5). */
  readonly blobs = new Map<string, Uint8Array>();
  /** Blob ids whose successful set_blob_result has been sent (or that a test preloaded). */
  readonly acknowledged = new Set<string>();
  readonly workspace: Workspace;
  readonly shell: ShellScript;
  readonly runs: RunHandle[] = [];

  constructor(
    readonly baseUrl: string,
    private readonly opts: { workspace?: Workspace; shell?: ShellScript; acceptGzip?: boolean; hooks?: RunHooks } = {},
  ) {
    this.workspace = opts.workspace ?? createWorkspace();
    this.shell = opts.shell ?? unscriptedShell;
  }

  /** Stores a blob as if an earlier session had SET it; returns its hex id. */
  putBlob(data: Uint8Array): string {
    const hex = sha256Hex(data);
    this.blobs.set(hex, data);
    this.acknowledged.add(hex);
    return hex;
  }

  startRun(start: RunStart): RunHandle {
    const run = new RunHandle(this, start, {
      acceptGzip: this.opts.acceptGzip ?? true,
      hooks: { ...this.opts.hooks, ...start.hooks },
    });
    this.runs.push(run);
    return run;
  }

  violations(): Violation[] {
    return this.runs.flatMap((run) => run.violations);
  }
}

export class RunHandle {
  readonly requestId: string;
  readonly frames: ObservedFrame[] = [];
  readonly checkpoints: ConversationStateStructure[] = [];
  readonly appends: AppendRecord[] = [];
  readonly execLog: Array<{ id: number; case: string; value: unknown }> = [];
  readonly aborts: number[] = [];
  readonly kvLog: Array<{ id: number; case: string; blobId: string }> = [];
  readonly queries: InteractionQuery[] = [];
  readonly violations: Violation[] = [];
  readonly done: Promise<RunEnd>;

  private resolveDone!: (end: RunEnd) => void;
  private timeline = 0;
  private connection = 0;
  private current: RunSseConnection | undefined;
  private nextSeqno: bigint;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly holds: Array<{ capture(append: CapturedAppend): void; response: Promise<AppendResponse> }> = [];
  private readonly seenIds = new Map<string, number>();
  private readonly answered = new Map<number, { promise: Promise<void>; resolve: () => void }>();
  private readonly responder: ResponderContext;

  constructor(
    private readonly client: CursorClient,
    private readonly start: RunStart,
    private readonly opts: { acceptGzip: boolean; hooks: RunHooks },
  ) {
    this.requestId = start.requestId ?? randomUUID();
    this.nextSeqno = start.firstSeqno ?? 1n;
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.responder = {
      run: this,
      hooks: opts.hooks,
      store: client,
      send: (message, onSent) => this.enqueue(clientMessage(message), onSent),
      report: (violation) => this.violations.push(violation),
    };
    this.begin();
  }

  lastCheckpoint(): ConversationStateStructure | undefined {
    return this.checkpoints[this.checkpoints.length - 1];
  }

  kinds(opts?: FrameKindOptions): string[] {
    return frameKinds(this.frames, opts);
  }

  /** Raw BidiAppend. Without a seqno it takes the next one and keeps order; with one it is sent at once, as is. */
  append(message: AgentClientMessage, opts: { seqno?: bigint } = {}): Promise<AppendResponse> {
    return opts.seqno === undefined ? this.enqueue(message) : this.post(opts.seqno, message);
  }

  /** Sends an earlier append again, byte for byte (a duplicate delivery). */
  resendAppend(seqno: bigint): Promise<AppendResponse> {
    const earlier = this.appends.find((a) => a.seqno === seqno);
    if (!earlier) throw new Error(`no append with seqno ${seqno} to resend`);
    return this.post(seqno, earlier.message);
  }

  /** The next append the client produces gets its seqno but is not sent until release(); later ones go ahead. */
  holdNextAppend(): HeldAppend {
    let capture!: (append: CapturedAppend) => void;
    let settle!: (response: AppendResponse) => void;
    const captured = new Promise<CapturedAppend>((resolve) => (capture = resolve));
    this.holds.push({ capture, response: new Promise((resolve) => (settle = resolve)) });
    return {
      seqno: () => captured.then((c) => c.seqno),
      release: async () => {
        const c = await captured;
        const response = await this.post(c.seqno, c.message, c.onSent);
        settle(response); // whoever produced the append (e.g. an Exec answer) carries on now
        return response;
      },
    };
  }

  cancel(reason = "user canceled"): Promise<AppendResponse> {
    return this.enqueue(
      clientMessage({ case: "conversationAction", value: { action: { case: "cancelAction", value: { reason } } } }),
    );
  }

  /** Drops the RunSSE response, as a client losing its connection would. */
  disconnect(): void {
    this.frames.push({ kind: "disconnect", connection: this.connection, at: this.tick() });
    this.current?.drop();
    this.current = undefined;
  }

  /** Opens RunSSE again for the same request_id; the server's replayed backlog arrives again. */
  reconnect(): Promise<void> {
    return this.connect();
  }

  /** Resolves with the first frame (already seen or still to come) of that kind, e.g. "tool_call_started". */
  async waitForFrame(match: string | ((frame: ObservedFrame) => boolean), timeoutMs = 10_000): Promise<ObservedFrame> {
    const test = typeof match === "string" ? (f: ObservedFrame) => frameKind(f) === match : match;
    await waitUntil(
      () => this.frames.some(test),
      timeoutMs,
      () => `no frame ${String(match)} within ${timeoutMs} ms; saw ${JSON.stringify(this.kinds({ heartbeats: true }))}`,
    );
    return this.frames.find(test)!;
  }

  /** Settles once the client has sent (and got responses for) its whole answer to the index-th Exec. */
  execAnswered(index: number): Promise<void> {
    return this.answeredSlot(index).promise;
  }

  /** Settles when every append queued so far has been answered. */
  appendsSettled(): Promise<void> {
    return this.chain.then(() => undefined);
  }

  /** The run request always takes seqno 1, even when the test queues appends (e.g. a cancel) right away. */
  private begin(): void {
    const request = buildRunRequest(this.start, this.client.workspace);
    this.start.customize?.(request);
    const runRequest = clientMessage({ case: "runRequest", value: request });
    if (this.start.runSseFirst ?? true) {
      this.chain = this.connect();
      void this.enqueue(runRequest);
    } else {
      void this.enqueue(runRequest).then(() => this.connect());
    }
  }

  private async connect(): Promise<void> {
    const connection = ++this.connection;
    const frame = (f: FrameBody): void => {
      this.frames.push({ ...f, connection, at: this.tick() } as ObservedFrame);
    };
    this.current = openRunSse(
      this.client.baseUrl,
      this.requestId,
      { acceptGzip: this.opts.acceptGzip, headers: this.start.headers },
      {
        message: (message, compressed) => {
          frame({ kind: "message", message, compressed });
          this.react(message, connection);
        },
        end: (end) => {
          frame({ kind: "end", end });
          this.resolveDone(end);
        },
        broken: (end) => {
          frame({ kind: "eof", reason: `${end.code}: ${end.message}` });
          this.resolveDone(end);
        },
        violation: (detail) => this.violations.push({ kind: "wire", detail }),
      },
    );
    // Headers normally come at once; a server that holds them until its first frame must not deadlock the run.
    await Promise.race([this.current.headers, sleep(1_000)]);
  }

  private react(message: AgentServerMessage, connection: number): void {
    const m = message.message;
    switch (m.case) {
      case "kvServerMessage":
        if (!this.firstSighting(`kv:${m.value.id}`, connection)) return;
        if (m.value.message.case)
          this.kvLog.push({
            id: m.value.id,
            case: m.value.message.case,
            blobId: blobHex(m.value.message.value.blobId),
          });
        void answerKv(this.responder, m.value);
        return;
      case "execServerMessage": {
        if (!this.firstSighting(`exec:${m.value.id}`, connection)) return;
        const index =
          this.execLog.push({ id: m.value.id, case: m.value.message.case ?? "none", value: m.value.message.value }) - 1;
        void answerExecRequest(this.responder, m.value, index).then(() => this.answeredSlot(index).resolve());
        return;
      }
      case "execServerControlMessage":
        if (m.value.message.case === "abort") this.aborts.push(m.value.message.value.id);
        return;
      case "conversationCheckpointUpdate":
        this.checkpoints.push(m.value);
        this.checkClosure(m.value);
        return;
      case "interactionQuery":
        if (!this.firstSighting(`query:${m.value.id}`, connection)) return;
        this.queries.push(m.value);
        answerQuery(this.responder, m.value);
        return;
    }
  }

  /** False for a replay on a later connection; a repeat on the same connection is a server bug
   * (docs/protocol/cursor-tools.md §3.1). */
  private firstSighting(key: string, connection: number): boolean {
    const seenOn = this.seenIds.get(key);
    if (seenOn === undefined) {
      this.seenIds.set(key, connection);
      return true;
    }
    if (seenOn === connection)
      this.violations.push({ kind: "duplicate_id", detail: `${key} sent twice on connection ${connection}` });
    return false;
  }

  /** docs/protocol/cursor-run.md §5.2: a checkpoint may reference only blobs whose SET the client already acknowledged.
   * */
  private checkClosure(checkpoint: ConversationStateStructure): void {
    const { referenced } = blobClosure(checkpoint, this.client.blobs);
    const unacknowledged = referenced.filter((hex) => !this.client.acknowledged.has(hex));
    if (unacknowledged.length > 0) {
      this.violations.push({
        kind: "checkpoint_before_ack",
        detail: `checkpoint #${this.checkpoints.length} references ${unacknowledged.join(", ")}`,
      });
    }
  }

  private enqueue(message: AgentClientMessage, onSent?: () => void): Promise<AppendResponse> {
    const seqno = this.nextSeqno++;
    const hold = this.holds.shift();
    if (hold) {
      hold.capture({ seqno, message, onSent });
      return hold.response; // the test sends it with HeldAppend.release
    }
    const sent = this.chain.then(() => this.post(seqno, message, onSent));
    this.chain = sent;
    return sent;
  }

  private async post(seqno: bigint, message: AgentClientMessage, onSent?: () => void): Promise<AppendResponse> {
    const record: AppendRecord = { seqno, message };
    this.appends.push(record);
    const call = { requestId: this.requestId, seqno, message, headers: this.start.headers };
    record.response = await postBidiAppend(this.client.baseUrl, call, () => {
      record.sentAt = this.tick();
      onSent?.();
    });
    return record.response;
  }

  private answeredSlot(index: number): { promise: Promise<void>; resolve: () => void } {
    let slot = this.answered.get(index);
    if (!slot) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      slot = { promise, resolve };
      this.answered.set(index, slot);
    }
    return slot;
  }

  private tick(): number {
    return ++this.timeline;
  }
}

interface CapturedAppend {
  seqno: bigint;
  message: AgentClientMessage;
  onSent?: () => void;
}

type FrameBody = ObservedFrame extends infer F
  ? F extends ObservedFrame
    ? Omit<F, "connection" | "at">
    : never
  : never;
