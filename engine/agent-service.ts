// The request registry (docs/protocol/cursor-transport.md §6; docs/protocol/cursor-run.md §1.1, §7.1): request_id →
// RequestStream (+ its Run), conversation_id → the one live run. Client messages arrive here already in append_seqno
// order and are routed to the run as machine events; a newer run of a conversation cancels the older one, whose late
// events then reach a stopped actor.
import { create, toBinary } from "@bufbuild/protobuf";
import { createActor } from "xstate";
import {
  AgentClientMessageSchema,
  type AgentClientMessage,
  type AgentRunRequest,
  RequestedModelSchema,
} from "../proto/gen/agent/v1/agent_pb.js";
import { MAX_HELD_APPENDS, requestStreamMachine } from "../machines/request-stream.js";
import type { RunEnd } from "../machines/run.js";
import type { AgentBackend, HeldAppend, ParentLink, RunRoute, StreamSink } from "../transport/agent-backend.js";
import { type EndStream, RpcError } from "../cursor/errors.js";
import { buildRunMachine, createRunActor, type RunOutputs } from "./run-wiring.js";
import { toRunEvent } from "./client-events.js";
import { RunSession, type RunDeps } from "./run-session.js";
import { endStreamFor } from "./run-end.js";
import { RunSetupError } from "./run-errors.js";
import { type RoutedRun, namesNoModel, RunRouter, UpstreamRequests, routeRun } from "./run-route.js";
import { type Logger, redact, withFields } from "../log/logger.js";
import type { LimitsConfig, TimerConfig } from "./config.js";
import { DEFAULT_MAX_WAITING_STREAMS, INTERNAL_MESSAGE, MAX_EARLY_BYTES, runFields } from "./stream-entry.js";
import { frameEmitter, type RunHandle, type StreamEntry, streamDelays } from "./stream-entry.js";
import type { RunObserver } from "./live-runs.js";
import { cancelSubagent, SubagentLinks } from "./subagent-runs.js";

export type ServiceDeps = Omit<RunDeps, "isCurrent"> & {
  log: Logger;
  timers: TimerConfig;
  limits: Pick<LimitsConfig, "maxWaitingStreams">;
  /** The status page's live-run registry. */
  runs?: RunObserver;
};

export class AgentService implements AgentBackend {
  private readonly streams = new Map<string, StreamEntry>();
  /** Request ids whose stream still waits for its run_request: kept in step with each machine's state. */
  private readonly waiting = new Set<string>();
  private readonly liveRuns = new Map<string, RunHandle>();
  private readonly upstreamRequests = new UpstreamRequests();
  private readonly subagents = new SubagentLinks();
  private readonly router: RunRouter;
  /** Built once: providing a machine per stream or per run rebuilds its state nodes (issue 17). */
  private readonly streamMachine: typeof requestStreamMachine;
  private readonly runMachine: ReturnType<typeof buildRunMachine>;
  private closing = false;

  constructor(private readonly deps: ServiceDeps) {
    this.router = new RunRouter(deps.models, deps.store, deps.log);
    this.runMachine = buildRunMachine(deps.timers);
    this.streamMachine = requestStreamMachine.provide({
      actions: {
        deliver: ({ context }, { message }) =>
          this.contained(context.requestId, () => this.deliver(context.requestId, message)),
        abandon: ({ context }) => this.contained(context.requestId, () => this.abandon(context.requestId)),
      },
      delays: streamDelays(deps.timers),
    });
  }

  /** True while any run is live (blob garbage collection waits for none). */
  hasLiveRuns(): boolean {
    return this.liveRuns.size > 0;
  }

  /** Where a request's stream is served: the upstream once its run_request was for a model not served here. */
  routeOf(requestId: string): RunRoute {
    return this.upstreamRequests.has(requestId) ? "upstream" : "local";
  }

  /** Streams held in memory, and how many of them still wait for a run_request (diagnostics). */
  streamCounts(): { streams: number; waiting: number } {
    return { streams: this.streams.size, waiting: this.waiting.size };
  }

  /** RunSSE: replays the backlog, then follows the stream; the returned function detaches. */
  subscribe(requestId: string, sink: StreamSink): () => void {
    if (!this.streams.has(requestId)) this.checkWaitingRoom();
    const entry = this.entry(requestId);
    const { actor, outbound } = entry;
    const { end } = actor.getSnapshot().context;
    if (end) {
      outbound.replay(sink);
      sink.end(end);
      return () => {};
    }
    const detach = outbound.follow(sink);
    const handOver = () => sink.handOver();
    entry.handOvers.add(handOver);
    actor.send({ type: "SUBSCRIBE" });
    return () => {
      entry.handOvers.delete(handOver);
      detach();
      if (actor.getSnapshot().status === "active") actor.send({ type: "UNSUBSCRIBE" });
    };
  }

  /**
   * BidiAppend (and each message of a Run): admission happens in the RequestStream. A run_request or prewarm for a
   * model this gateway does not serve sends the whole request to the upstream; the caller relays the append.
   */
  append(
    requestId: string,
    seqno: bigint,
    message: AgentClientMessage,
    parent?: ParentLink,
  ): RunRoute | Promise<RunRoute> {
    if (this.closing) throw new RpcError("byok-gateway is shutting down", "unavailable");
    this.subagents.bind(requestId, parent, (id) => this.streams.get(id)?.run);
    if (this.upstreamRequests.has(requestId)) return "upstream";
    const route = this.streams.get(requestId)?.run ? undefined : this.router.routeOf(message);
    if (route instanceof Promise) return route.then((r) => this.admitRouted(requestId, seqno, message, r));
    return this.admitRouted(requestId, seqno, message, route);
  }

  private admitRouted(
    requestId: string,
    seqno: bigint,
    message: AgentClientMessage,
    route: RoutedRun | undefined,
  ): RunRoute {
    const m = message.message;
    if (m.case === "runRequest" && m.value.conversationId && route) {
      this.router.remember(m.value.conversationId, route);
      // A turn naming no model continues with the model the conversation's last local run named.
      if (route.route === "local" && namesNoModel(m.value.requestedModel) && route.modelId)
        m.value.requestedModel = create(RequestedModelSchema, { modelId: route.modelId });
    }
    if (route?.route === "upstream") {
      const fields = m.case === "runRequest" ? runFields(requestId, m.value) : { request_id: requestId };
      this.handOver(requestId, { ...fields, route: route.reason });
      return "upstream";
    }
    const existing = this.streams.get(requestId);
    // A message before its run_request (a prewarm, an early append) opens the stream and waits there, in
    // append_seqno order, for the run_request; such streams count against the same bound as waiting RunSSEs.
    if (!existing) this.checkWaitingRoom();
    const entry = existing ?? this.entry(requestId);
    if (!entry.run && m.case !== "runRequest") this.chargeEarly(entry, requestId, message);
    const { actor } = entry;
    if (actor.getSnapshot().context.held.size >= MAX_HELD_APPENDS) {
      throw new RpcError(
        `request ${requestId} has ${MAX_HELD_APPENDS} appends waiting for a missing append_seqno`,
        "resource_exhausted",
      );
    }
    actor.send({ type: "APPEND", seqno, message });
    return "local";
  }

  private chargeEarly(entry: StreamEntry, requestId: string, message: AgentClientMessage): void {
    entry.earlyBytes += toBinary(AgentClientMessageSchema, message).length;
    if (entry.earlyBytes > MAX_EARLY_BYTES)
      throw new RpcError(
        `request ${requestId} sent more than ${MAX_EARLY_BYTES} bytes before its run_request`,
        "resource_exhausted",
      );
  }

  private checkWaitingRoom(): void {
    const maxWaiting = this.deps.limits.maxWaitingStreams ?? DEFAULT_MAX_WAITING_STREAMS;
    if (this.waiting.size >= maxWaiting)
      throw new RpcError(`${maxWaiting} request streams already wait for their run_request`, "resource_exhausted");
  }

  /** The transport ended the call itself (a protocol error on a Run stream): the run stops as canceled. */
  cancel(requestId: string, reason: string): void {
    const run = this.streams.get(requestId)?.run;
    if (run && !run.finished) run.actor.send({ type: "CANCEL", cause: "client", reason });
    else this.endWithoutRun(requestId, { ok: false, error: new RpcError(reason, "canceled") });
  }

  /** SIGTERM: stop taking runs, end every live run as canceled, wait for their EndStreams. */
  async close(timeoutMs = 5_000): Promise<void> {
    this.closing = true;
    const ended: Promise<void>[] = [];
    for (const [requestId, entry] of this.streams) {
      if (entry.run) {
        // A run that just ended may still be writing its terminal commit: the store must outlive it too.
        if (!entry.run.finished)
          entry.run.actor.send({ type: "CANCEL", cause: "shutdown", reason: "byok-gateway is shutting down" });
        ended.push(entry.run.ended);
      } else if (!entry.actor.getSnapshot().context.end) {
        this.endWithoutRun(requestId, { ok: false, error: new RpcError("byok-gateway is shutting down", "canceled") });
      }
    }
    await Promise.race([Promise.all(ended), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    for (const entry of this.streams.values()) entry.actor.stop();
    this.streams.clear();
    this.waiting.clear();
  }

  private entry(requestId: string): StreamEntry {
    const existing = this.streams.get(requestId);
    if (existing) return existing;
    const { heartbeatMs } = this.deps.timers;
    const actor = createActor(this.streamMachine, { input: { requestId, ...(heartbeatMs ? { heartbeatMs } : {}) } });
    const { outbound } = actor.getSnapshot().context;
    const entry: StreamEntry = { actor, outbound, run: undefined, handOvers: new Set(), earlyBytes: 0 };
    this.streams.set(requestId, entry);
    const forget = () => {
      if (this.streams.get(requestId) !== entry) return;
      this.streams.delete(requestId);
      this.subagents.forget(requestId);
      this.waiting.delete(requestId);
    };
    actor.subscribe({
      next: (snapshot) => {
        if (snapshot.matches({ open: { run: "awaitingRunRequest" } })) this.waiting.add(requestId);
        else this.waiting.delete(requestId);
      },
      complete: forget,
      // Last resort (the actions are contained): the stream is gone, the process stays up.
      error: (err) => {
        this.deps.log.error("request stream failed", { request_id: requestId, error: err });
        forget();
      },
    });
    actor.start();
    return entry;
  }

  /** An unexpected exception while serving one request ends that request `internal`, never the process. */
  private contained(requestId: string, work: () => void): void {
    try {
      work();
    } catch (err) {
      const run = this.streams.get(requestId)?.run;
      if (run && !run.finished) {
        run.actor.stop();
        return run.crash(err);
      }
      this.deps.log.error("request failed unexpectedly", { request_id: requestId, error: err });
      this.endWithoutRun(requestId, { ok: false, error: new RpcError(INTERNAL_MESSAGE, "internal") });
    }
  }

  private deliver(requestId: string, message: AgentClientMessage): void {
    const m = message.message;
    if (m.case === "runRequest") return this.startRun(requestId, m.value);
    const event = toRunEvent(message);
    const run = this.streams.get(requestId)?.run;
    if (!event) return;
    if (!run || run.finished) {
      (run?.log ?? this.deps.log).info("client message after its run ended dropped", {
        request_id: requestId,
        kind: m.case,
      });
      return;
    }
    run.actor.send(event);
  }

  private startRun(requestId: string, request: AgentRunRequest): void {
    const entry = this.streams.get(requestId)!;
    if (entry.run && !entry.run.finished) {
      entry.run.log.warn("second run_request on a live request ignored");
      return;
    }
    const log = withFields(this.deps.log, runFields(requestId, request));
    const action = request.action?.action;
    if (action?.case === "cancelSubagentAction") {
      cancelSubagent(this.liveRuns.get(action.value.subagentId), action.value.subagentId, log);
      return this.endWithoutRun(requestId, { ok: true });
    }
    let session: RunSession;
    try {
      session = new RunSession(
        { ...this.deps, log, isCurrent: () => this.liveRuns.get(session.conversationId) === handle },
        requestId,
        request,
        this.subagents.of(requestId),
      );
    } catch (e) {
      const error = e instanceof RunSetupError ? new RpcError(e.message, e.code) : new RpcError(String(e), "internal");
      log.error("run_request refused", { error: error.message });
      return this.endWithoutRun(requestId, { ok: false, error });
    }
    let resolveEnded!: () => void;
    const handle: RunHandle = {
      session,
      log,
      actor: undefined as never,
      finished: false,
      ended: new Promise((r) => {
        resolveEnded = r;
      }),
      crash: (err) => {
        log.error("run crashed", { error: err });
        finish({ kind: "failed", code: "internal", cause: "setup", message: INTERNAL_MESSAGE });
      },
    };
    const finish = (end: RunEnd) => {
      if (handle.finished) return;
      handle.finished = true;
      // `ended` waits for the terminal commit too, so a shutdown never closes the store under it.
      void this.finishRun(entry, handle, end).then(resolveEnded);
    };
    const previous = this.liveRuns.get(session.conversationId);
    this.liveRuns.set(session.conversationId, handle);
    if (previous && !previous.finished)
      previous.actor.send({
        type: "CANCEL",
        cause: "superseded",
        reason: "superseded by a newer run of this conversation",
      });
    const outputs: RunOutputs = { ...frameEmitter(entry, handle), finish };
    handle.actor = createRunActor(this.runMachine, session, outputs, {
      requestId,
      conversationId: session.conversationId,
    });
    handle.actor.subscribe({ error: (err) => handle.crash(err) });
    this.deps.runs?.track(requestId, session.conversationId, request.requestedModel, handle.actor);
    entry.run = handle;
    log.info("run started", { route: routeRun(this.deps.models, request.requestedModel).reason });
    handle.actor.start();
  }

  private finishRun(entry: StreamEntry, handle: RunHandle, end: RunEnd): Promise<void> {
    const { session, log } = handle;
    if (end.kind === "failed") log.error("run failed", { code: end.code, cause: end.cause, error: end.message });
    else log.info(`run ${end.kind}`, end.kind === "canceled" ? { cause: end.cause } : {});
    if (this.liveRuns.get(session.conversationId) === handle) this.liveRuns.delete(session.conversationId);
    if (end.kind === "canceled") this.subagents.cancelChildren(session, (id) => this.streams.get(id)?.run);
    this.deps.runs?.ended(session.requestId, end, session.usage);
    // The terminal commit is issued before the EndStream (docs/protocol/cursor-transport.md §7.5); the single store
    // connection keeps the order.
    // A run that never claimed its row (its claim failed, or it ended before) answers only its own client.
    const outcome = {
      status: end.kind,
      ...(end.kind === "failed" ? { error: end.message } : {}),
      usage: session.usage,
    };
    const committed = (
      session.claimed ? this.deps.store.finishRun(session.requestId, outcome) : Promise.resolve()
    ).then(
      () => {},
      (e: unknown) => log.error("run terminal commit failed", { error: String(e) }),
    );
    // The front door: no configured secret leaves in an error (providers/http.ts also removes the request's own key).
    const sent = end.kind === "failed" ? { ...end, message: redact(end.message) } : end;
    entry.actor.send({ type: "END", end: endStreamFor(sent) });
    return committed;
  }

  takeEarlyAppends(requestId: string): HeldAppend[] {
    return this.upstreamRequests.takeEarly(requestId);
  }

  /**
   * Forgets the local stream of a request now served upstream; its subscribers follow the upstream instead, and the
   * appends it held for the run_request are kept for the caller to relay.
   */
  private handOver(requestId: string, fields: object): void {
    this.upstreamRequests.add(requestId);
    this.deps.log.info("run relayed to the upstream", fields);
    const entry = this.streams.get(requestId);
    if (!entry) return;
    const held = [...entry.actor.getSnapshot().context.held].sort(([a], [b]) => (a < b ? -1 : 1));
    this.upstreamRequests.holdEarly(
      requestId,
      held.map(([seqno, message]) => ({ seqno, message })),
    );
    this.streams.delete(requestId);
    this.waiting.delete(requestId);
    this.subagents.forget(requestId);
    for (const follow of [...entry.handOvers]) follow();
    entry.actor.stop();
  }

  private endWithoutRun(requestId: string, end: EndStream): void {
    this.streams.get(requestId)?.actor.send({ type: "END", end });
  }

  /** The last subscriber left and did not come back within the grace: cancel (docs/protocol/cursor-transport.md §6). */
  private abandon(requestId: string): void {
    const run = this.streams.get(requestId)?.run;
    if (run && !run.finished)
      run.actor.send({ type: "CANCEL", cause: "subscriber_gone", reason: "RunSSE subscriber gone" });
    else this.endWithoutRun(requestId, { ok: false, error: new RpcError("RunSSE subscriber gone", "canceled") });
  }
}
