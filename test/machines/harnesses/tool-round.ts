// Harness for ToolRound (docs/protocol/cursor-tools.md §1.2, §2.5, §3.1, §4.1): the real machine with real ToolCall
// children and their real PendingExec children (aborts recorded), a real Read and a real Write driver (Write needs a
// second Exec, so the round grants an id); checkpoint and result-commit actors never settle on their own, the path
// supplies their outcomes.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor, fromCallback, type AnyActorRef, type AnyMachineSnapshot } from "xstate";
import {
  AskQuestionInteractionResponseSchema,
  ReadResultSchema,
  ToolCallSchema,
  WriteResultSchema,
  type AgentServerMessage,
} from "../../../proto/gen/agent/v1/agent_pb.js";
import { pendingExecMachine } from "../../../machines/pending-exec.js";
import { toolCallMachine } from "../../../machines/tool-call.js";
import { toolRoundMachine, type ToolRoundOutput } from "../../../machines/tool-round.js";
import type { ToolInvocation } from "../../../cursor/tools/types.js";
import type { Harness, SuppliedEvent } from "../support/replay-graph.js";
import { never, readResult } from "./exec-and-checkpoint.js";

export const invocationOf = (callId: string, name: string, args: Record<string, unknown>): ToolInvocation => ({
  callId,
  modelCallId: "r:0",
  name,
  argumentsJson: JSON.stringify(args),
  args,
});

interface RoundRecord {
  frames: AgentServerMessage[];
  aborts: number[];
  execs: Map<string, AnyActorRef>;
}

export const kindOf = (m: AgentServerMessage): string =>
  m.message.case === "interactionUpdate" ? (m.message.value.message.case ?? "") : (m.message.case ?? "");
export const wrongBranch = { case: "writeResult", value: create(WriteResultSchema, {}) } as const;
export const fileNotFound = {
  case: "readResult",
  value: create(ReadResultSchema, { result: { case: "fileNotFound", value: { path: "b.txt" } } }),
} as const;
export const written = {
  case: "writeResult",
  value: create(WriteResultSchema, { result: { case: "success", value: { path: "b.txt", linesCreated: 1 } } }),
} as const;

/** The commit outcome of a call in `committing`, delivered to its invoked commit actor's listeners. */
type CommitEvent = { type: "COMMIT"; index: number; ok: boolean };

const children = (s: AnyMachineSnapshot) => Object.entries(s.children) as Array<[string, AnyActorRef]>;
const callsOf = (s: AnyMachineSnapshot) => children(s).filter(([id]) => id.startsWith("call-"));

/** An AskQuestion answered with a choice. */
export const answered = {
  case: "askQuestionInteractionResponse",
  value: create(AskQuestionInteractionResponseSchema, {
    result: { result: { case: "success", value: { answers: [{ questionId: "q", selectedOptionIds: ["a"] }] } } },
  }),
} as const;
export const askQuestion = invocationOf("call_q", "AskQuestion", {
  questions: [
    {
      id: "q",
      prompt: "Go on?",
      options: [
        { id: "a", label: "Yes" },
        { id: "b", label: "No" },
      ],
    },
  ],
});

interface RoundVariant {
  name: string;
  calls: ToolInvocation[];
  /** Client messages the path may send, by event type. */
  client: Record<"CLIENT_EXEC" | "CLIENT_STREAM_CLOSE" | "CLIENT_THROW" | "CLIENT_INTERACTION", SuppliedEvent[]>;
  /** tool_call_completed frames of a settled round. */
  completedCalls: number;
}

const roundHarness = (v: RoundVariant): Harness<RoundRecord> => ({
  name: `tool-round (${v.name})`,
  machine: toolRoundMachine,
  maxSimplePaths: 400,
  start(clock, inspect) {
    const record: RoundRecord = { frames: [], aborts: [], execs: new Map() };
    const emitFrame = (_: unknown, { message }: { message: AgentServerMessage }) => void record.frames.push(message);
    const machine = toolRoundMachine.provide({
      actors: {
        checkpoint: fromCallback(() => () => {}) as never,
        toolCall: toolCallMachine.provide({
          actors: {
            commitResult: never(),
            pendingExec: pendingExecMachine.provide({
              actions: { sendAbort: (_, { id }) => void record.aborts.push(id) },
            }),
          },
          actions: { emitFrame },
        }),
      },
    });
    const actor = createActor(machine, {
      inspect,
      input: {
        modelCallId: "r:0",
        calls: v.calls,
        ctx: { conversationId: "c" },
        execIdBase: 1,
        interactionIdBase: 1,
        kvIdBase: 0,
      },
      clock,
    }).start();
    // Exec children are kept by the test so their last state can be read after their call stops them.
    const keep = () => {
      for (const [, call] of callsOf(actor.getSnapshot()))
        for (const [id, ref] of children(call.getSnapshot())) if (id.startsWith("exec-")) record.execs.set(id, ref);
    };
    keep();
    const send = (e: SuppliedEvent) => {
      if (e.type === "COMMIT") {
        const { index, ok } = e as CommitEvent;
        const call = actor.getSnapshot().children[`call-${index}`] as AnyActorRef;
        call.send(
          ok
            ? { type: "xstate.done.actor.commit", output: { callIndex: index, toolCall: create(ToolCallSchema, {}) } }
            : { type: "xstate.error.actor.commit", error: new Error("SQLITE_FULL") },
        );
      } else actor.send(e as never);
      keep();
    };
    return { record, send, snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [
    s.context.nextExecId,
    callsOf(s).map(([id, ref]) => {
      const call = ref.getSnapshot();
      return [id, call.value, children(call).map(([execId, exec]) => [execId, exec.getSnapshot().value ?? null])];
    }),
  ],
  extraEvents: (s) =>
    callsOf(s)
      .filter(([, ref]) => ref.getSnapshot().value === "committing")
      .flatMap(([id], i): CommitEvent[] => {
        const index = Number(id.slice(5));
        return i === 0
          ? [
              { type: "COMMIT", index, ok: true },
              { type: "COMMIT", index, ok: false },
            ]
          : [{ type: "COMMIT", index, ok: true }];
      }),
  payloads(type) {
    if (type.startsWith("xstate.done.actor.0.toolRound.")) {
      return [
        { type, output: { ok: true, nextKvId: 4 } },
        { type, output: { ok: false, error: "client refused blob SET 1: disk full", nextKvId: 4 } },
      ];
    }
    switch (type) {
      case "CLIENT_EXEC":
      case "CLIENT_STREAM_CLOSE":
      case "CLIENT_THROW":
      case "CLIENT_INTERACTION":
        return v.client[type];
      case "INTERACTION_ID_WANTED":
      case "EXEC_ID_WANTED":
      case "CALL_COMPLETED":
      case "CALL_FAILED":
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
    // Calls start in order, each with its first Exec right after its tool_call_started (§4.4).
    if (kinds.filter((k) => k === "execServerMessage").length >= 2)
      expect(kinds.slice(0, 4)).to.deep.equal([
        "toolCallStarted",
        "execServerMessage",
        "toolCallStarted",
        "execServerMessage",
      ]);
    if (s.value === "settled") {
      expect(output.outcome).to.deep.equal({ kind: "ok" });
      expect(kinds.filter((k) => k === "toolCallCompleted").length).to.equal(v.completedCalls);
      expect(record.aborts).to.deep.equal([]);
    } else {
      expect(output.outcome.kind).to.equal(
        s.value === "canceled" ? "canceled" : output.outcome.kind === "protocol" ? "protocol" : "checkpoint",
      );
      if (s.value === "canceled") expect(trace.map((e) => e.type)).to.include("CANCEL");
    }
    // Every Exec id sent stays used for the rest of the request.
    for (const id of record.execs.keys()) expect(Number(id.slice(5))).to.be.lessThan(output.nextExecId);
  },
  lateEvents: [{ type: "CLIENT_EXEC", id: 1, message: readResult() }, { type: "CANCEL" }] as SuppliedEvent[],
});

/** Two Exec tools (Write's second Exec takes a granted id), and a question for the user. */
export const toolRoundHarnesses = [
  roundHarness({
    name: "Read and Write",
    calls: [
      invocationOf("call_a", "Read", { path: "a.txt" }),
      invocationOf("call_b", "Write", { path: "b.txt", contents: "new\n" }),
    ],
    client: {
      CLIENT_EXEC: [
        { type: "CLIENT_EXEC", id: 1, message: readResult() },
        { type: "CLIENT_EXEC", id: 2, message: fileNotFound },
        { type: "CLIENT_EXEC", id: 3, message: written },
        { type: "CLIENT_EXEC", id: 1, message: wrongBranch },
        { type: "CLIENT_EXEC", id: 0, message: readResult() },
        { type: "CLIENT_EXEC", id: 9, message: readResult() },
      ],
      CLIENT_STREAM_CLOSE: [0, 1, 3, 9].map((id) => ({ type: "CLIENT_STREAM_CLOSE", id })),
      CLIENT_THROW: [0, 2, 9].map((id) => ({ type: "CLIENT_THROW", id, error: "boom" })),
      CLIENT_INTERACTION: [],
    },
    completedCalls: 2,
  }),
  roundHarness({
    name: "AskQuestion",
    calls: [askQuestion],
    client: {
      CLIENT_EXEC: [],
      CLIENT_STREAM_CLOSE: [],
      CLIENT_THROW: [],
      CLIENT_INTERACTION: [0, 1, 9].map((id) => ({ type: "CLIENT_INTERACTION", id, answer: answered })),
    },
    completedCalls: 1,
  }),
];
