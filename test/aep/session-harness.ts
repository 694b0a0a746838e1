// The AepSession harness for the generated-path tests in machine-paths.test.ts: a real session actor with a fake turn
// (ending on the worker's result or exit, or at the next event after a session control) and a logging worker process,
// the events each state is fed, the rules every ending must keep (persisted once, the client told, every worker
// process gone) and what the terminated and deleted endings each add.
import { expect } from "chai";
import { createActor, createMachine, fromCallback } from "xstate";
import { aepSessionMachine, type WorkerProcessInput } from "../../machines/aep-session.js";
import type { aepTurnMachine } from "../../machines/aep-turn.js";
import type { WorkerEvent } from "../../workers/types.js";
import type { Harness } from "../machines/support/replay-graph.js";
import { takenBy } from "./edge-coverage.js";

// ---- AepSession --------------------------------------------------------------------------------------------------

export const sessionTaken = new Set<string>();

/**
 * A turn that ends on the worker's result or exit; a session control ends it at the next event it is sent, as a real
 * turn still delivering its input does (so the session is seen waiting in busy.endingForControl).
 */
function fakeTurn(log: string[]) {
  const ends = (e: { type: string; event?: WorkerEvent }) =>
    e.event?.type === "turn.finished" || e.event?.type === "worker.exited";
  return createMachine({
    entry: () => void log.push("turn"),
    initial: "live",
    states: {
      live: { on: { CONTROL: "delivering", "*": { guard: ({ event }) => ends(event), target: "ended" } } },
      delivering: { on: { "*": "ended" } },
      ended: { type: "final" },
    },
  });
}

export const sessionHarness: Harness<string[]> = {
  name: "aep-session",
  machine: aepSessionMachine,
  maxSimplePaths: 150,
  start(clock) {
    const log: string[] = [];
    const machine = aepSessionMachine.provide({
      actors: {
        turn: fakeTurn(log) as unknown as typeof aepTurnMachine,
        workerProcess: fromCallback<{ type: "NONE" }, WorkerProcessInput>(({ input }) => {
          log.push(`worker ${input.generation} resume=${input.resume}`);
          return () => void log.push(`worker ${input.generation} gone`);
        }),
      },
      actions: {
        emit: (_, { event }) => void log.push(`emit ${event.type} ${(event.data as { state?: string }).state ?? ""}`),
        persist: (_, { state }) => void log.push(`persist ${state}`),
        forget: () => void log.push("forget"),
        denyStray: () => void log.push("deny stray"),
        rejectAnswer: () => void log.push("reject answer"),
      },
    });
    const actor = createActor(machine, {
      clock,
      input: { sessionId: "s", workdir: "/w", workerSessionId: "w1", workerStarted: false },
      inspect: takenBy(aepSessionMachine.id, sessionTaken),
    }).start();
    return { record: log, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [s.context.workerAlive, s.context.workerStarted, s.context.pendingControl?.action ?? null],
  payloads(type, s) {
    const generation = s.context.generation;
    switch (type) {
      case "INPUT":
        return [{ type, executionId: "x", clientMessageId: "c", content: "hi" }];
      case "ANSWER":
        return [{ type, id: "p", answer: { kind: "permission", allowed: true } }];
      case "CONTROL":
        return (["gc", "reset", "terminate", "delete"] as const)
          .map((action) => ({ type, control: { action } }))
          .concat([{ type, control: { action: "cd", workdir: "/v" } } as never]);
      case "WORKER":
        return [
          { type, generation, event: { type: "worker.ready", workerSessionId: "w1" } },
          { type, generation, event: { type: "interaction.requested", id: "p", kind: "permission", payload: {} } },
          { type, generation, event: { type: "turn.finished", outcome: "completed" } },
          { type, generation, event: { type: "worker.exited", code: null, signal: "SIGSEGV", crashed: true } },
          // A late event of an older process: never routed.
          { type, generation: generation - 1, event: { type: "worker.exited", code: 0, signal: null, crashed: false } },
        ];
      default:
        return undefined;
    }
  },
  checkFinal({ record, snapshot }) {
    const ending = snapshot().value as "terminated" | "deleted";
    expect(record.filter((r) => r === "persist terminated")).to.have.length(1);
    expect(record, "the client is told").to.include("emit state terminated");
    const started = record.filter((r) => /^worker \d+ resume/.test(r)).length;
    expect(
      record.filter((r) => / gone$/.test(r)),
      "every worker process went",
    ).to.have.length(started);
    sessionEndingChecks[ending](record);
  },
  lateEvents: [{ type: "INPUT", executionId: "y", clientMessageId: "d", content: "late" }, { type: "STOP" }],
};

export const sessionEndingChecks: Record<"terminated" | "deleted", (log: string[]) => void> = {
  terminated: (log) => expect(log).to.not.include("forget"),
  deleted: (log) =>
    expect(log.indexOf("forget"), "forgotten after the client is told").to.be.greaterThan(
      log.indexOf("emit state terminated"),
    ),
};
