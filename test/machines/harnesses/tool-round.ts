// Harness for ToolRound (docs/protocol/cursor-tools.md §1.2, §2.5, §3.1, §4.1): the real machine with real PendingExec
// children (their aborts recorded) and the real Read driver; checkpoint and result-commit actors never settle on their
// own, the path supplies their outcomes.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor, fromCallback, type AnyActorRef } from "xstate";
import { ToolCallSchema, WriteResultSchema, type AgentServerMessage } from "../../../proto/gen/agent/v1/agent_pb.js";
import { pendingExecMachine } from "../../../machines/pending-exec.js";
import { toolRoundMachine, type ToolRoundOutput } from "../../../machines/tool-round.js";
import type { ToolInvocation } from "../../../cursor/tools/types.js";
import type { Harness, SuppliedEvent } from "../support/replay-graph.js";
import { never, readResult } from "./exec-and-checkpoint.js";

const read = (callId: string, path: string): ToolInvocation => ({
  callId,
  modelCallId: "r:0",
  name: "Read",
  argumentsJson: JSON.stringify({ path }),
  args: { path },
});

interface RoundRecord {
  frames: AgentServerMessage[];
  aborts: number[];
  execs: Map<string, AnyActorRef>;
}

const kindOf = (m: AgentServerMessage): string =>
  m.message.case === "interactionUpdate" ? (m.message.value.message.case ?? "") : (m.message.case ?? "");
const wrongBranch = { case: "writeResult", value: create(WriteResultSchema, {}) } as const;

export const toolRoundHarness: Harness<RoundRecord> = {
  name: "tool-round",
  machine: toolRoundMachine,
  coversEveryTransition: true,
  maxSimplePaths: 400,
  start(clock, inspect) {
    const record: RoundRecord = { frames: [], aborts: [], execs: new Map() };
    const machine = toolRoundMachine.provide({
      actors: {
        checkpoint: fromCallback(() => () => {}) as never,
        commitResult: never(),
        pendingExec: pendingExecMachine.provide({ actions: { sendAbort: (_, { id }) => void record.aborts.push(id) } }),
      },
      actions: { emitFrame: (_, { message }) => void record.frames.push(message) },
    });
    const actor = createActor(machine, {
      inspect,
      input: {
        modelCallId: "r:0",
        calls: [read("call_a", "a.txt"), read("call_b", "b.txt")],
        ctx: { conversationId: "c" },
        execIdBase: 1,
        kvIdBase: 0,
      },
      clock,
    }).start();
    // Exec children are kept by the test so their last state can be read after the round stops them.
    const keep = () => {
      for (const [id, ref] of Object.entries(actor.getSnapshot().children))
        if (id.startsWith("exec-")) record.execs.set(id, ref as AnyActorRef);
    };
    keep();
    return { record, send: (e) => (actor.send(e as never), keep()), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [
    s.context.calls.map((c: { execId?: number; completed: boolean; settled: boolean }) => [
      c.execId ?? 0,
      c.completed,
      c.settled,
    ]),
    Object.entries(s.children).map(([id, ref]) => [id, (ref as AnyActorRef).getSnapshot().value ?? null]),
  ],
  payloads(type, s) {
    const calls = s.context.calls as Array<{ completed: boolean; settled: boolean }>;
    const committing = calls.flatMap((c, i) => (c.completed && !c.settled ? [i] : []));
    if (type.startsWith("xstate.done.actor.0.toolRound.")) {
      return [
        { type, output: { ok: true, nextKvId: 4 } },
        { type, output: { ok: false, error: "client refused blob SET 1: disk full", nextKvId: 4 } },
      ];
    }
    switch (type) {
      case "xstate.done.actor.commit.*":
        return committing.map((i) => ({
          type: `xstate.done.actor.commit.${i}`,
          output: { callIndex: i, toolCall: create(ToolCallSchema, {}) },
        }));
      case "xstate.error.actor.commit.*":
        return committing
          .slice(0, 1)
          .map((i) => ({ type: `xstate.error.actor.commit.${i}`, error: new Error("SQLITE_FULL") }));
      case "CLIENT_EXEC":
        return [
          { type, id: 1, message: readResult() },
          { type, id: 2, message: readResult("beta\n") },
          { type, id: 1, message: wrongBranch },
          { type, id: 9, message: readResult() },
        ];
      case "CLIENT_STREAM_CLOSE":
        return [1, 2].map((id) => ({ type, id }));
      case "CLIENT_THROW":
        return [{ type, id: 1, error: "boom" }];
      case "EXEC_DATA":
      case "EXEC_FAILED":
        return []; // only its own children send these
      default:
        return undefined;
    }
  },
  checkFinal({ record, snapshot }, trace) {
    const s = snapshot();
    const output = s.output as ToolRoundOutput;
    const kinds = record.frames.map(kindOf);
    const execStates = [...record.execs.entries()].map(
      ([id, ref]) => [Number(id.slice(5)), ref.getSnapshot().value as string] as const,
    );
    expect(new Set(record.aborts).size, "at most one abort per exec").to.equal(record.aborts.length);
    // Abort exactly for the execs that were still running: never for one whose result was taken.
    expect(record.aborts.sort()).to.deep.equal(
      execStates
        .filter(([, v]) => v === "aborted")
        .map(([id]) => id)
        .sort(),
    );
    expect(
      execStates.filter(([, v]) => v === "running"),
      "an exec left running without an abort",
    ).to.deep.equal([]);
    if (s.value === "settled") {
      expect(output.outcome).to.deep.equal({ kind: "ok" });
      expect(kinds.filter((k) => k === "toolCallCompleted").length).to.equal(2);
      expect(record.aborts).to.deep.equal([]);
    } else {
      expect(output.outcome.kind).to.equal(
        s.value === "canceled" ? "canceled" : output.outcome.kind === "protocol" ? "protocol" : "checkpoint",
      );
      if (s.value === "canceled") expect(trace.map((e) => e.type)).to.include("CANCEL");
    }
    expect(output.nextExecId).to.equal(1 + record.execs.size);
  },
  lateEvents: [{ type: "CLIENT_EXEC", id: 1, message: readResult() }, { type: "CANCEL" }] as SuppliedEvent[],
};
