// Harnesses for ToolCall (docs/protocol/cursor-tools.md §2–§5): the real machine under a minimal parent that records
// what the call reports, real PendingExec children (aborts recorded) and real drivers; the result commit never
// settles on its own, the path supplies its outcome (as does an approved service call). One call runs one tool, so
// the variants together reach every state and transition: Read (one Exec), arguments Read cannot take, Write (a second
// Exec on a granted id), Shell (deltas and waits); AwaitShell pauses between two reads; AskQuestion (an interaction),
// WebSearch (approval, then the service call) and WebFetch (approval, then an Exec on a granted id); TodoWrite and
// UpdateCurrentStep the local transport (answered at once: the commit succeeds, fails, or the run is cancelled or its
// client gone while it is written). Task's child states (foreground done, background started, child failed, canceled
// by ABORT) are paths of their own.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor, setup, type AnyActorRef, type AnyMachineSnapshot } from "xstate";
import {
  FetchResultSchema,
  ToolCallSchema,
  WebFetchRequestResponseSchema,
  WebSearchRequestResponseSchema,
  type AgentServerMessage,
} from "../../../proto/gen/agent/v1/agent_pb.js";
import { pendingExecMachine } from "../../../machines/pending-exec.js";
import { toolCallMachine, type ToolCallReport } from "../../../machines/tool-call.js";
import {
  DRIVER_PAUSE_MS,
  type ToolCompletion,
  type ToolContext,
  type ToolInvocation,
} from "../../../cursor/tools/types.js";
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
const terminal = (text: string) =>
  clientMessage({
    case: "readResult",
    value: { result: { case: "success", value: { output: { case: "content", value: text } } } },
  });

function variant(
  name: string,
  invocation: ToolInvocation,
  execMessages: SuppliedEvent[],
  answers: SuppliedEvent[] = [],
  ctx: ToolContext = { conversationId: "c" },
  /** What the call's completion must say, for tools whose result text is the point (Task). */
  checkCompletion?: (completion: ToolCompletion) => void,
): Harness<CallRecord> {
  const local = execMessages.length === 0 && answers.length === 0;
  return {
    name: `tool-call (${name})`,
    machine: toolCallMachine,
    maxSimplePaths: 200,
    start(clock, inspect) {
      const record: CallRecord = { frames: [], aborts: [], reports: [], execs: new Map() };
      const call = toolCallMachine.provide({
        actors: {
          commitResult: never(),
          callService: never(),
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
          input: { index: 0, modelCallId: "r:0", invocation, ctx, reservedExecId: RESERVED },
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
        case "xstate.done.actor.service":
          return [{ type, output: { kind: "webSearch", references: [{ title: "T", url: "https://t", chunk: "" }] } }];
        case "xstate.error.actor.service":
          return [{ type, error: new Error("connection refused") }];
        case "xstate.after.driverPause.toolCall.pausing":
          return [{ type: "TIMER", ms: DRIVER_PAUSE_MS, delay: "driverPause" }];
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
      // A local tool (or arguments no tool takes) never reaches the client: started, then completed or nothing.
      if (local) expect(kinds.filter((k) => k !== "toolCallStarted" && k !== "toolCallCompleted")).to.deep.equal([]);
      const { completion } = snapshot().context as { completion?: ToolCompletion };
      if (checkCompletion && end === "completed") checkCompletion(completion!);
    },
    lateEvents: [{ type: "CLIENT_EXEC", id: RESERVED, message: readResult() }, { type: "ABORT" }],
  };
}

const fetchDecision = (approve: boolean) =>
  ({
    case: "webFetchRequestResponse",
    value: create(WebFetchRequestResponseSchema, {
      result: approve ? { case: "approved", value: {} } : { case: "rejected", value: { reason: "no" } },
    }),
  }) as const;
const fetched = {
  case: "fetchResult",
  value: create(FetchResultSchema, { result: { case: "success", value: { url: "https://x.test", content: "x" } } }),
} as const;
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
    "WebSearch",
    invocationOf("call_w", "WebSearch", { search_term: "xstate invoke" }),
    [],
    [
      { type: "CLIENT_INTERACTION", id: QUERY, answer: webSearchAnswer("approved", {}) },
      { type: "CLIENT_INTERACTION", id: QUERY, answer: webSearchAnswer("rejected", { reason: "no" }) },
    ],
  ),
  variant(
    "WebFetch",
    invocationOf("call_f", "WebFetch", { url: "https://x.test" }),
    [{ type: "CLIENT_EXEC", id: GRANTED, message: fetched }],
    [
      { type: "CLIENT_INTERACTION", id: QUERY, answer: fetchDecision(true) },
      { type: "CLIENT_INTERACTION", id: QUERY, answer: fetchDecision(false) },
    ],
  ),
  variant(
    "TodoWrite, local",
    invocationOf("call_t", "TodoWrite", {
      todos: [
        { id: "a", content: "read", status: "in_progress" },
        { id: "b", content: "fix", status: "pending" },
      ],
      merge: false,
    }),
    [],
    [],
    { conversationId: "c", turn: { steps: 1 } },
  ),
  variant(
    "UpdateCurrentStep, local",
    invocationOf("call_u", "UpdateCurrentStep", { current_step: "Reading" }),
    [],
    [],
    { conversationId: "c", turn: { steps: 2 } },
  ),
  variant(
    "AwaitShell, pausing between reads",
    invocationOf("call_w", "AwaitShell", { shell_id: "7", block_until_ms: 1000 }),
    [
      { type: "CLIENT_EXEC", id: RESERVED, message: terminal("---\npid: 1\n---\nstarting\n") },
      { type: "CLIENT_EXEC", id: GRANTED, message: terminal("---\npid: 1\nlast_exit_code: 0\n---\ndone\n") },
    ],
    [],
    { conversationId: "c", terminalsFolder: "/t" },
  ),
  variant(
    "Task in the foreground",
    invocationOf("call_d", "Task", { description: "Map", prompt: "Find the parser." }),
    [
      { type: "CLIENT_EXEC", id: RESERVED, message: childDone },
      { type: "CLIENT_EXEC", id: RESERVED, message: childFailed },
    ],
    [],
    { conversationId: "c" },
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
    { conversationId: "c" },
    taskCompletion("Subagent name: Docs\nSubagent ID: agent-2"),
  ),
];

function webSearchAnswer(kind: "approved" | "rejected", value: { reason?: string }) {
  const result = { case: kind, value } as never;
  return { case: "webSearchRequestResponse", value: create(WebSearchRequestResponseSchema, { result }) } as const;
}
