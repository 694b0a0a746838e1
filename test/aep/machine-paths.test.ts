// Paths generated from the AEP machines' graphs reach every cause of an end as a distinct path; each is replayed on a
// fresh real actor and the ending it produces is asserted: for AepTurn the wire (state(running) first, error before
// done when failed, exactly one done, the runtime fact after it, one input.ack); for the others their output. Every
// state node and every declared transition must be reached by some path, so a new state or edge needs a path.
import { expect } from "chai";
import { createActor, fromPromise, type AnyMachineSnapshot } from "xstate";
import type { ClientEnvelope, ServerEvent } from "../../aep/wire/envelope.js";
import { aepConnectionMachine, type ConnectionEndCause } from "../../machines/aep-connection.js";
import { aepInteractionMachine } from "../../machines/aep-interaction.js";
import { aepTurnMachine } from "../../machines/aep-turn.js";
import type { TurnEnd, TurnEndCause } from "../../machines/aep-turn-ends.js";
import type { WorkerEvent } from "../../workers/types.js";
import type { Harness, SuppliedEvent } from "../machines/support/replay-graph.js";
import { takenBy } from "./edge-coverage.js";
import { allOf, coverPaths } from "./path-coverage.js";
import { sessionEndingChecks, sessionHarness, sessionTaken } from "./session-harness.js";

const never = <T>() => fromPromise<T, any>(() => new Promise<T>(() => {}));

// ---- AepTurn ------------------------------------------------------------------------------------------------------

type TurnLog =
  | { kind: "emit"; event: ServerEvent }
  | { kind: "ack"; status: string; errorCode?: string }
  | { kind: "settle"; end: TurnEnd }
  | { kind: "kill" };

const worker = (event: WorkerEvent): SuppliedEvent => ({ type: "WORKER", event });
const results = (["completed", "failed", "api_error", "limit", "stopped"] as const).map((outcome) =>
  worker({ type: "turn.finished", outcome, ...(outcome === "completed" ? {} : { message: `turn ${outcome}` }) }),
);
/** What the driver reports when the CLI's credentials are refused, or a line is over the limit. */
const driverFailures = (["CONFIG_INVALID", "WORKER_OUTPUT_LIMIT"] as const).map((errorCode) =>
  worker({ type: "turn.finished", outcome: "failed", errorCode, message: `driver ${errorCode}` }),
);
const crash = worker({ type: "worker.exited", code: 1, signal: null, crashed: true });
const sigkill = worker({ type: "worker.exited", code: null, signal: "SIGKILL", crashed: true });
const turnTaken = new Set<string>();

const turnHarness: Harness<TurnLog[]> = {
  name: "aep-turn",
  machine: aepTurnMachine,
  maxSimplePaths: 200,
  start(clock) {
    const log: TurnLog[] = [];
    const machine = aepTurnMachine.provide({
      actors: {
        deliver: never<void>(),
        interrupt: never<boolean>(),
        interaction: aepInteractionMachine.provide({ actions: { sendAnswer: () => {} } }),
      },
      actions: {
        emit: (_, { event }) => void log.push({ kind: "emit", event }),
        ack: (_, { status, errorCode }) => void log.push({ kind: "ack", status, ...(errorCode ? { errorCode } : {}) }),
        settleRuntime: (_, { end }) => void log.push({ kind: "settle", end }),
        killWorker: () => void log.push({ kind: "kill" }),
      },
    });
    const actor = createActor(machine, {
      clock,
      input: { executionId: "x1", clientMessageId: "c1", content: "hi", generation: 1 },
      inspect: takenBy(aepTurnMachine.id, turnTaken),
    }).start();
    return { record: log, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [Object.keys(s.context.interactions).length, s.context.started, s.context.held.length > 0],
  payloads(type, s) {
    switch (type) {
      case "WORKER":
        // While delivering, what arrives is only held: two kinds are enough to show it is replayed.
        if (s.matches("delivering")) return [worker({ type: "turn.started", inputId: "x1" }), results[0]!];
        return [
          worker({ type: "turn.started", inputId: "x1" }),
          worker({ type: "text.delta", blockId: "b", text: "a" }),
          worker({ type: "interaction.requested", id: "p", kind: "permission", payload: { tool_name: "Bash" } }),
          worker({ type: "interaction.withdrawn", id: "p" }),
          worker({ type: "turn.error", code: "api_error", message: "boom" }),
          ...results,
          ...driverFailures,
          crash,
          sigkill,
        ];
      case "STOP":
        return [{ type }];
      case "CONTROL":
        return [{ type, reason: "terminate" }];
      case "ANSWER":
        return [
          { type, id: "p", answer: { kind: "permission", allowed: true } },
          { type, id: "__proto__", answer: { kind: "permission", allowed: true } },
        ];
      case "INTERACTION_SETTLED":
        return []; // only its interaction child sends it
      case "xstate.done.actor.deliver":
        return [{ type, output: undefined }];
      case "xstate.error.actor.deliver":
        return [{ type, error: new Error("EPIPE") }];
      case "xstate.done.actor.interrupt":
        return [
          { type, output: true },
          { type, output: false },
        ];
      case "xstate.error.actor.interrupt":
        return [{ type, error: new Error("gone") }];
      default:
        return undefined;
    }
  },
  checkFinal({ record, snapshot }) {
    const s = snapshot();
    const end = (s.output as { end: TurnEnd }).end;
    expect(s.value).to.equal(end.outcome);
    const emitted = record.flatMap((r) => (r.kind === "emit" ? [r.event] : []));
    const kinds = emitted.map((e) => e.type);
    expect(emitted[0]).to.deep.equal({ type: "state", data: { state: "running" } });
    expect(kinds.filter((k) => k === "done")).to.have.length(1);
    expect(record.at(-1)).to.deep.equal({ kind: "settle", end }, "the runtime fact is settled last, after done");
    expect(record.at(-2)).to.include({ kind: "emit" });
    expect(kinds.at(-1), "done is the turn's last event").to.equal("done");
    expect(kinds.filter((k) => k === "runtime.execution.started").length).to.be.at.most(1);
    const done = emitted.at(-1)!.data as { success: boolean; reason?: string };
    expect(done.success).to.equal(end.outcome === "completed");
    if (end.outcome === "failed") expect(kinds.slice(0, -1), "error before done").to.include("error");
    else expect(done.reason).to.equal(end.outcome === "stopped" ? end.reason : undefined);
    const acks = record.filter((r) => r.kind === "ack");
    expect(acks).to.have.length(1);
    expect(acks[0]).to.deep.equal(
      end.cause === "not_delivered"
        ? { kind: "ack", status: "failed", errorCode: "WORKER_START_FAILED" }
        : { kind: "ack", status: "delivered" },
    );
    turnEndingChecks[end.cause](end, record);
  },
  lateEvents: [results[0]!, crash, { type: "STOP" }, { type: "CONTROL", reason: "gc" }],
};

const lastError = (log: TurnLog[]) =>
  log.flatMap((r) => (r.kind === "emit" && r.event.type === "error" ? [r.event.data] : [])).at(-1);

/** What each cause must produce beyond the common rules. */
const turnEndingChecks: Record<TurnEndCause, (end: TurnEnd, log: TurnLog[]) => void> = {
  finished: () => {},
  not_delivered: (_, log) => expect(lastError(log)).to.include({ code: "WORKER_START_FAILED" }),
  result_error: (end) => expect(end).to.include({ code: "INTERNAL_ERROR", message: "turn failed" }),
  api_error: (end) => expect(end).to.include({ message: "turn api_error" }),
  limit: (end) => expect(end).to.include({ message: "turn limit" }),
  worker_auth: (end) => expect(end).to.include({ code: "CONFIG_INVALID", message: "driver CONFIG_INVALID" }),
  output_limit: (end) => expect(end).to.include({ code: "WORKER_OUTPUT_LIMIT" }),
  worker_crash: (end, log) => {
    expect(end).to.include({ code: "WORKER_CRASH" });
    expect(lastError(log)).to.satisfy((e: { code: string }) => ["WORKER_CRASH", "INTERNAL_ERROR"].includes(e.code));
  },
  sigkill: (end, log) => {
    expect(end).to.include({ code: "PROCESS_SIGKILL" });
    expect(lastError(log)).to.satisfy((e: { code: string }) => ["PROCESS_SIGKILL", "INTERNAL_ERROR"].includes(e.code));
  },
  turn_timeout: (end, log) => {
    expect(end).to.include({ code: "TURN_TIMEOUT" });
    expect(
      log.some((r) => r.kind === "kill"),
      "the overrunning worker is killed",
    ).to.equal(true);
  },
  worker_timeout: (end, log) => {
    expect(end).to.include({ code: "WORKER_TIMEOUT" });
    expect(log.some((r) => r.kind === "emit" && r.event.type === "runtime.execution.started")).to.equal(false);
  },
  interrupted: (end) => expect(end).to.include({ reason: "interrupted" }),
  stop_honoured: (end) => expect(end).to.include({ reason: "stopped_by_user" }),
  exited_while_stopping: (end) => expect(end).to.include({ reason: "stopped_by_user" }),
  killed: (end, log) => {
    expect(end).to.include({ reason: "stopped_by_user" });
    expect(
      log.some((r) => r.kind === "kill"),
      "the worker was killed",
    ).to.equal(true);
  },
  session_control: (end) => expect(end).to.include({ reason: "terminate" }),
};

// ---- AepConnection ------------------------------------------------------------------------------------------------

const frame = (type: string, data: Record<string, unknown> = {}): SuppliedEvent => ({
  type: "FRAME",
  envelope: { id: `m-${type}`, event: { type, data } } as unknown as ClientEnvelope,
});
const connectionTaken = new Set<string>();

const connectionHarness: Harness<string[]> = {
  name: "aep-connection",
  machine: aepConnectionMachine,
  maxSimplePaths: 100,
  start(clock) {
    const log: string[] = [];
    const machine = aepConnectionMachine.provide({
      actors: { attach: never<void>() },
      actions: {
        pong: () => void log.push("pong"),
        sendError: (_, { code }) => void log.push(`error ${code}`),
        close: (_, { reason }) => void log.push(`close ${reason}`),
        route: (_, { envelope }) => void log.push(`route ${envelope.event.type}`),
        terminate: () => void log.push("terminate"),
        detach: () => void log.push("detach"),
      },
      // Two held frames stand for the 64 the real bound allows.
      guards: { holdIsFull: ({ context }) => context.held.length >= 2 },
    });
    const actor = createActor(machine, { clock, inspect: takenBy(aepConnectionMachine.id, connectionTaken) }).start();
    return { record: log, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => s.context.held.length,
  payloads(type) {
    if (type === "FRAME") return [frame("init", { workdir: "/w" }), frame("ping"), frame("input", { content: "x" })];
    if (type === "xstate.done.actor.attach") return [{ type, output: undefined }];
    if (type === "xstate.error.actor.attach") return [{ type, error: new Error("no such workdir") }];
    return undefined;
  },
  checkFinal({ record, snapshot }) {
    const { cause } = snapshot().output as { cause: ConnectionEndCause };
    expect(record.at(-1), "the session is released exactly once, last").to.equal("detach");
    expect(record.filter((r) => r === "detach")).to.have.length(1);
    connectionEndingChecks[cause](record);
  },
  lateEvents: [frame("input", { content: "late" }), { type: "SOCKET_CLOSED" }],
};

const closesWith = (reason: string) => (log: string[]) => expect(log.slice(-3, -1)).to.include(`close ${reason}`);
const connectionEndingChecks: Record<ConnectionEndCause, (log: string[]) => void> = {
  init_timeout: closesWith("init timeout"),
  attach_refused: closesWith("INTERNAL_ERROR"),
  flooded_before_state: closesWith("too many frames before state"),
  closed_before_init: (log) => expect(log.some((r) => r.startsWith("close"))).to.equal(false),
  closed_during_attach: (log) => expect(log.some((r) => r.startsWith("route"))).to.equal(false),
  closed: () => {},
  heartbeat_missed: (log) => expect(log.at(-2), "the half-open socket is dropped").to.equal("terminate"),
};

// ---- AepInteraction -----------------------------------------------------------------------------------------------

const interactionTaken = new Set<string>();
type InteractionEnding = "answered" | "timedOut" | "withdrawn" | "canceled";

const interactionHarness: Harness<Array<{ answer: unknown } | "settled">> = {
  name: "aep-interaction",
  machine: aepInteractionMachine,
  maxSimplePaths: 50,
  start(clock) {
    const log: Array<{ answer: unknown } | "settled"> = [];
    const machine = aepInteractionMachine.provide({
      actions: {
        sendAnswer: (_, { answer }) => void log.push({ answer }),
        settled: () => void log.push("settled"),
      },
    });
    const actor = createActor(machine, {
      clock,
      input: { id: "p", kind: "permission", generation: 2, key: "interaction-0" },
      inspect: takenBy(aepInteractionMachine.id, interactionTaken),
    }).start();
    return { record: log, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  payloads(type) {
    if (type !== "ANSWER") return undefined;
    return [
      { type, answer: { kind: "permission", allowed: true } },
      { type, answer: { kind: "elicitation", action: "accept" } }, // the wrong kind: ignored
    ];
  },
  checkFinal({ record, snapshot }) {
    expect(record.at(-1), "settled once, last").to.equal("settled");
    expect(record.filter((r) => r === "settled")).to.have.length(1);
    const answers = record.filter((r) => r !== "settled");
    const ending = snapshot().value as InteractionEnding;
    interactionEndingChecks[ending](answers.map((a) => (a as { answer: unknown }).answer));
  },
  lateEvents: [{ type: "ANSWER", answer: { kind: "permission", allowed: false } }, { type: "CANCEL" }],
};

const interactionEndingChecks: Record<InteractionEnding, (answers: unknown[]) => void> = {
  answered: (a) => expect(a).to.deep.equal([{ kind: "permission", allowed: true }]),
  timedOut: (a) => expect(a).to.deep.equal([{ kind: "permission", allowed: false, reason: (a[0] as any)?.reason }]),
  withdrawn: (a) => expect(a, "nothing is written").to.deep.equal([]),
  canceled: (a) => expect(a, "nothing is written").to.deep.equal([]),
};

// ---- the suite ----------------------------------------------------------------------------------------------------

const byCause = (s: AnyMachineSnapshot) => (s.output as { end: TurnEnd }).end.cause;

describe("AEP machines: every ending cause is a generated path", function () {
  this.timeout(120_000);

  it("aep-turn: each cause ends the turn in its own way, with the wire order kept", () => {
    const causes = coverPaths(turnHarness, turnTaken, byCause);
    expect([...causes.keys()].sort()).to.deep.equal(allOf(turnEndingChecks).sort());
  });

  it("aep-connection: each cause closes the connection and releases the session once", () => {
    const causes = coverPaths(connectionHarness, connectionTaken, (s) => (s.output as { cause: string }).cause);
    expect([...causes.keys()].sort()).to.deep.equal(allOf(connectionEndingChecks).sort());
  });

  it("aep-session: terminate and delete end it; crash, gc, reset, cd and the idle reclaim are each an edge", () => {
    const causes = coverPaths(sessionHarness, sessionTaken, (s) => String(s.value));
    expect([...causes.keys()].sort()).to.deep.equal(allOf(sessionEndingChecks).sort());
  });

  it("aep-interaction: answered, auto-denied, withdrawn or canceled, each exactly once", () => {
    const causes = coverPaths(interactionHarness, interactionTaken, (s) => String(s.value));
    expect([...causes.keys()].sort()).to.deep.equal(allOf(interactionEndingChecks).sort());
  });
});
