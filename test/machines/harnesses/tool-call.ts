// Harnesses for ToolCall (docs/protocol/cursor-tools.md §2–§5): the real machine under a minimal parent that records
// what the call reports, real PendingExec children (aborts recorded) and real drivers; the result commit never
// settles on its own, the path supplies its outcome. One call runs one tool, so four variants together reach every
// state and transition: Read (one Exec), arguments Read cannot take, Write (a second Exec on a granted id) and Shell
// (deltas and waits). Task's child states (foreground done, background started, child failed, canceled by ABORT)
// are paths of their own.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor, setup, type AnyActorRef, type AnyMachineSnapshot } from "xstate";
import { ToolCallSchema, type AgentServerMessage } from "../../../proto/gen/agent/v1/agent_pb.js";
import { pendingExecMachine } from "../../../machines/pending-exec.js";
import { toolCallMachine, type ToolCallReport } from "../../../machines/tool-call.js";
import type { ToolCompletion, ToolInvocation } from "../../../cursor/tools/types.js";
import type { Harness, SuppliedEvent } from "../support/replay-graph.js";
import { clientMessage } from "../../tools/helpers.js";
import { never, readResult } from "./exec-and-checkpoint.js";
import { answered, askQuestion, fileNotFound, invocationOf, kindOf, written, wrongBranch } from "./tool-round.js";

interface CallRecord {
  frames: AgentServerMessage[];
  aborts: number[];
  reports: ToolCallReport[];
  execs: Map<string, AnyActorRef>;
}

const RESERVED = 5;
const GRANTED = 8;
const QUERY = 4;
const shell = clientMessage;

function variant(
  name: string,
  invocation: ToolInvocation,
  execMessages: SuppliedEvent[],
  answers: SuppliedEvent[] = [],
  /** What the call's completion must say, for tools whose result text is the point (Task). */
  checkCompletion?: (completion: ToolCompletion) => void,
): Harness<CallRecord> {
  return {
    name: `tool-call (${name})`,
    machine: toolCallMachine,
    maxSimplePaths: 200,
    start(clock, inspect) {
      const record: CallRecord = { frames: [], aborts: [], reports: [], execs: new Map() };
      const call = toolCallMachine.provide({
        actors: {
          commitResult: never(),
          pendingExec: pendingExecMachine.provide({
            actions: { sendAbort: (_, { id }) => void record.aborts.push(id) },
          }),
        },
        actions: { emitFrame: (_, { message }) => void record.frames.push(message) },
      });
      const parent = setup({ actors: { call } }).createMachine({
        invoke: {
          id: "call",
          src: "call",
          input: { index: 0, modelCallId: "r:0", invocation, ctx: { conversationId: "c" }, reservedExecId: RESERVED },
        },
        on: { "*": { actions: ({ event }) => void record.reports.push(event as ToolCallReport) } },
      });
      const actor = createActor(parent, { inspect, clock }).start();
      const child = actor.getSnapshot().children.call as AnyActorRef;
      const keep = () => {
        for (const [id, ref] of Object.entries(child.getSnapshot().children as Record<string, AnyActorRef>))
          record.execs.set(id, ref);
      };
      keep();
      return {
        record,
        send: (e) => (child.send(e), keep()),
        snapshot: () => child.getSnapshot() as AnyMachineSnapshot,
      };
    },
    summary: (s) => [s.context.execId ?? null, Object.keys(s.children)],
    payloads(type) {
      switch (type) {
        case "CLIENT_EXEC":
          return execMessages;
        case "CLIENT_STREAM_CLOSE":
          return [{ type, id: RESERVED }];
        case "CLIENT_THROW":
          return [{ type, id: RESERVED, error: "boom" }];
        case "EXEC_ID_GRANTED":
          return [{ type, execId: GRANTED }];
        case "INTERACTION_ID_GRANTED":
          return [{ type, interactionId: QUERY }];
        case "CLIENT_INTERACTION":
          return answers;
        case "xstate.done.actor.commit":
          return [{ type, output: { callIndex: 0, toolCall: create(ToolCallSchema, {}) } }];
        case "xstate.error.actor.commit":
          return [{ type, error: new Error("SQLITE_FULL") }];
        case "EXEC_DATA":
        case "EXEC_FAILED":
          return []; // only its own PendingExec children send these
        default:
          return undefined;
      }
    },
    checkFinal({ record, snapshot }) {
      const end = snapshot().value as string;
      const kinds = record.frames.map(kindOf);
      expect(kinds[0], "tool_call_started comes first").to.equal("toolCallStarted");
      expect(kinds.filter((k) => k === "toolCallCompleted").length).to.equal(end === "completed" ? 1 : 0);
      const told = record.reports.map((r) => r.type).filter((t) => t === "CALL_COMPLETED" || t === "CALL_FAILED");
      expect(told).to.deep.equal(end === "completed" ? ["CALL_COMPLETED"] : end === "failed" ? ["CALL_FAILED"] : []);
      const execStates = [...record.execs].map(([id, ref]) => [Number(id.slice(5)), ref.getSnapshot().value] as const);
      expect(
        execStates.filter(([, v]) => v === "running"),
        "an exec left running",
      ).to.deep.equal([]);
      expect(record.aborts).to.deep.equal(execStates.filter(([, v]) => v === "aborted").map(([id]) => id));
      if (end !== "aborted") expect(record.aborts).to.deep.equal([]);
      const { completion } = snapshot().context as { completion?: ToolCompletion };
      if (checkCompletion && end === "completed") checkCompletion(completion!);
    },
    lateEvents: [{ type: "CLIENT_EXEC", id: RESERVED, message: readResult() }, { type: "ABORT" }],
  };
}

const subagentResult = (
  result:
    | { case: "success"; value: { agentId: string; finalMessage?: string } }
    | { case: "error"; value: { error: string } },
) => clientMessage({ case: "subagentResult", value: { result } });
const childDone = subagentResult({ case: "success", value: { agentId: "agent-1", finalMessage: "Found it." } });
const childStarted = subagentResult({ case: "success", value: { agentId: "agent-2" } });
const childFailed = subagentResult({ case: "error", value: { error: "the child's model refused" } });

/** Task's result: the child named (and its report, in the foreground), or the child's failure as an error. */
const taskCompletion = (expected: string) => (c: ToolCompletion) => {
  if (c.isError) expect(c.content).to.contain("the child's model refused");
  else expect(c.content).to.equal(expected);
};

export const toolCallHarnesses = [
  variant("Read", invocationOf("call_a", "Read", { path: "a.txt" }), [
    { type: "CLIENT_EXEC", id: RESERVED, message: readResult() },
    { type: "CLIENT_EXEC", id: RESERVED, message: wrongBranch },
  ]),
  variant("arguments Read cannot take", invocationOf("call_a", "Read", {}), []),
  variant("Write", invocationOf("call_b", "Write", { path: "b.txt", contents: "new\n" }), [
    { type: "CLIENT_EXEC", id: RESERVED, message: fileNotFound },
    { type: "CLIENT_EXEC", id: GRANTED, message: written },
  ]),
  variant("Shell", invocationOf("call_c", "Shell", { command: "make", working_directory: "/repo" }), [
    {
      type: "CLIENT_EXEC",
      id: RESERVED,
      message: shell({ case: "shellStream", value: { event: { case: "start", value: {} } } }),
    },
    {
      type: "CLIENT_EXEC",
      id: RESERVED,
      message: shell({ case: "shellStream", value: { event: { case: "stdout", value: { data: "ok\n" } } } }),
    },
    {
      type: "CLIENT_EXEC",
      id: RESERVED,
      message: shell({ case: "shellStream", value: { event: { case: "exit", value: { code: 0, cwd: "/repo" } } } }),
    },
  ]),
  variant(
    "AskQuestion",
    askQuestion,
    [],
    [
      { type: "CLIENT_INTERACTION", id: QUERY, answer: answered },
      { type: "CLIENT_INTERACTION", id: QUERY, answer: { case: undefined } },
      { type: "CLIENT_INTERACTION", id: QUERY, answer: { case: "switchModeRequestResponse", value: {} } },
      { type: "CLIENT_INTERACTION", id: QUERY + 1, answer: answered },
    ],
  ),
  variant(
    "Task in the foreground",
    invocationOf("call_d", "Task", { description: "Map", prompt: "Find the parser." }),
    [
      { type: "CLIENT_EXEC", id: RESERVED, message: childDone },
      { type: "CLIENT_EXEC", id: RESERVED, message: childFailed },
    ],
    [],
    taskCompletion("Subagent name: Map\nSubagent ID: agent-1\n\nFound it."),
  ),
  variant(
    "Task in the background",
    invocationOf("call_e", "Task", { description: "Docs", prompt: "Draft.", run_in_background: true }),
    [
      { type: "CLIENT_EXEC", id: RESERVED, message: childStarted },
      { type: "CLIENT_EXEC", id: RESERVED, message: childFailed },
    ],
    [],
    taskCompletion("Subagent name: Docs\nSubagent ID: agent-2"),
  ),
];
