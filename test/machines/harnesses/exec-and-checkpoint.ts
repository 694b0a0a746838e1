// Harnesses for PendingExec and Checkpoint: the real machines, their side effects recorded, invoked actors that
// never settle on their own (the path supplies their done/error events).
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor, fromPromise, setup, type AnyActorRef, type AnyMachineSnapshot } from "xstate";
import { ReadResultSchema, type AgentServerMessage } from "../../../proto/gen/agent/v1/agent_pb.js";
import { checkpointMachine, type CheckpointOutput } from "../../../machines/checkpoint.js";
import { pendingExecMachine, type PendingExecReport } from "../../../machines/pending-exec.js";
import { frames } from "../../../cursor/frames.js";
import type { Harness } from "../support/replay-graph.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- stands in for actors of any input type
export const never = <T>() => fromPromise<T, any>(() => new Promise<T>(() => {}));

export const readResult = (text = "alpha\n") =>
  ({
    case: "readResult",
    value: create(ReadResultSchema, {
      result: {
        case: "success",
        value: { path: "a.txt", totalLines: 1, fileSize: 6n, output: { case: "content", value: text } },
      },
    }),
  }) as const;

interface ExecRecord {
  aborts: number[];
  reports: PendingExecReport[];
}

/** PendingExec reports to its parent, so it runs under a minimal parent that records what it is told. */
export const pendingExecHarness: Harness<ExecRecord> = {
  name: "pending-exec",
  machine: pendingExecMachine,
  coversEveryTransition: true,
  maxSimplePaths: 200,
  start(clock, inspect) {
    const record: ExecRecord = { aborts: [], reports: [] };
    const parent = setup({
      actors: {
        exec: pendingExecMachine.provide({ actions: { sendAbort: (_, { id }) => void record.aborts.push(id) } }),
      },
    }).createMachine({
      invoke: { id: "exec", src: "exec", input: { id: 7, callId: "call_a" } },
      on: { "*": { actions: ({ event }) => void record.reports.push(event as PendingExecReport) } },
    });
    const actor = createActor(parent, { inspect, clock }).start();
    const child = actor.getSnapshot().children.exec as AnyActorRef;
    return { record, send: (e) => child.send(e), snapshot: () => child.getSnapshot() as AnyMachineSnapshot };
  },
  payloads: (type) =>
    type === "DATA"
      ? [
          { type, message: readResult() },
          { type, message: { case: undefined } },
        ]
      : type === "THROW"
        ? [{ type, error: "permission denied" }]
        : undefined,
  checkFinal({ record, snapshot }, trace) {
    const end = snapshot().value as string;
    // Abort only for an exec still running, exactly once; a taken (backgrounded) exec is never aborted.
    expect(record.aborts).to.deep.equal(end === "aborted" ? [7] : []);
    const failures = record.reports.filter((r) => r.type === "EXEC_FAILED");
    expect(failures.length).to.equal(end === "failed" ? 1 : 0);
    if (end === "closed") expect(trace.map((e) => e.type)).to.include("TAKE");
    const data = record.reports.filter((r) => r.type === "EXEC_DATA");
    expect(
      data.every((r) => r.message.case !== undefined),
      "an empty oneof is not a result",
    ).to.equal(true);
  },
  lateEvents: [
    { type: "DATA", message: readResult() },
    { type: "STREAM_CLOSE" },
    { type: "THROW", error: "late" },
    { type: "ABORT" },
  ],
};

interface CheckpointRecord {
  frames: AgentServerMessage[];
  acked: Set<number>;
  refused: boolean;
}

const PUBLISHED = frames.turnEnded({});
const blob = (n: number) => ({ id: new Uint8Array([n]), data: new Uint8Array([n, n]) });

export const checkpointHarness: Harness<CheckpointRecord> = {
  name: "checkpoint",
  machine: checkpointMachine,
  coversEveryTransition: true,
  maxSimplePaths: 300,
  start(clock, inspect) {
    const record: CheckpointRecord = { frames: [], acked: new Set(), refused: false };
    const machine = checkpointMachine.provide({
      actors: { build: never(), commit: never() },
      actions: { emitFrame: (_, { message }) => void record.frames.push(message) },
    });
    const actor = createActor(machine, { inspect, input: { kind: "settled", kvIdBase: 4 }, clock }).start();
    return {
      record,
      send: (e) => {
        if (e.type === "KV_SET_RESULT") {
          const { id, error } = e as unknown as { id: number; error?: string };
          const live = actor.getSnapshot();
          if (live.status === "active" && live.context.awaiting.includes(id))
            error ? (record.refused = true) : record.acked.add(id);
        }
        actor.send(e as never);
      },
      snapshot: () => actor.getSnapshot(),
    };
  },
  summary: (s) => [s.context.awaiting.length, s.context.plan?.sets.length ?? null, s.context.plan?.durable ?? null],
  payloads(type, s) {
    if (type.startsWith("xstate.done.actor.") && type.endsWith(".building")) {
      // A durable plan (a settled round's, committed with its last results) is published without a commit.
      return [0, 2].flatMap((n) =>
        [false, true].map((durable) => ({
          type,
          output: { sets: Array.from({ length: n }, (_, i) => blob(i)), publish: [PUBLISHED], durable },
        })),
      );
    }
    if (type.startsWith("xstate.error.actor.")) return [{ type, error: new Error("disk gone") }];
    if (type === "KV_SET_RESULT") {
      const awaiting = s.context.awaiting as number[];
      return [
        ...awaiting.slice(0, 1).flatMap((id) => [
          { type, id },
          { type, id, error: "disk full" },
        ]),
        { type, id: 99 }, // not one of ours: ignored
      ];
    }
    return undefined;
  },
  checkFinal({ record, snapshot }, trace) {
    const s = snapshot();
    const output = s.output as CheckpointOutput;
    const committed = trace.some((e) => e.type.startsWith("xstate.done.actor.") && e.type.endsWith(".committing"));
    const sets = record.frames.flatMap((f) => (f.message.case === "kvServerMessage" ? [f.message.value.id] : []));
    expect(new Set(sets).size, "each blob SET under its own KV id, never retried").to.equal(sets.length);
    const published = record.frames.filter((f) => f === PUBLISHED).length;
    if (s.value === "published") {
      expect(output.ok).to.equal(true);
      expect(published).to.equal(1);
      expect(
        sets.every((id) => record.acked.has(id)),
        "published only after every SET in its closure was acknowledged",
      ).to.equal(true);
      expect(record.frames.at(-1)).to.equal(PUBLISHED);
      expect(committed, "committed here unless the plan came durable").to.equal(s.context.plan?.durable !== true);
    } else {
      expect(output.ok).to.equal(false);
      expect(output.error).to.be.a("string");
      expect(published, "a failed checkpoint publishes nothing").to.equal(0);
    }
    expect(output.nextKvId).to.equal(4 + sets.length);
  },
  lateEvents: [
    { type: "KV_SET_RESULT", id: 4 },
    { type: "KV_SET_RESULT", id: 5, error: "late" },
  ],
};
