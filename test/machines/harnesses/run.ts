// Harness for Run (docs/protocol/cursor-run.md §7.1, §10, §10.2–§10.6; docs/protocol/cursor-transport.md §7.5;
// docs/protocol/cursor-tools.md §3.1): the real machine and its real actions; setup actors never settle on their own
// and the ModelCall / ToolRound / Checkpoint children are stubs that record what the run tells them, so the path
// supplies every outcome (including ones a real child produces only rarely).
import { expect } from "chai";
import { createHash } from "node:crypto";
import { createActor, fromCallback, type AnyMachineSnapshot } from "xstate";
import type { AgentServerMessage } from "../../../proto/gen/agent/v1/agent_pb.js";
import { runMachine, type PreparedRun, type RunEnd } from "../../../machines/run.js";
import { cancelCauses, failureCodes } from "../../../machines/run-ends.js";
import type { ToolInvocation } from "../../../cursor/tools/types.js";
import type { Harness, SuppliedEvent } from "../support/replay-graph.js";
import { never } from "./exec-and-checkpoint.js";

type Entry =
  | { kind: "frame"; message: AgentServerMessage }
  | { kind: "told"; child: string; type: string }
  | { kind: "finish"; end: RunEnd };

const BLOB = new TextEncoder().encode("history blob");
const BLOB_ID = createHash("sha256").update(BLOB).digest();
const read: ToolInvocation = {
  callId: "call_a",
  modelCallId: "r:0",
  name: "Read",
  argumentsJson: '{"path":"a.txt"}',
  args: { path: "a.txt" },
};
const prepared: PreparedRun = { toolNames: ["Read"], toolContext: { conversationId: "c" } };
const assistant = { text: "", toolCalls: [] };

const stub = (child: string, log: Entry[]) =>
  fromCallback(({ receive }) => {
    receive((e) => void log.push({ kind: "told", child, type: e.type }));
  }) as never;

/** Every ending the generated paths produced, by cause (the path test checks that each cause is reached). */
export const runEndsReached = new Map<string, RunEnd>();

export const runHarness: Harness<Entry[]> = {
  name: "run",
  machine: runMachine,
  maxSimplePaths: 400,
  coversEveryTransition: true,
  start(clock, inspect) {
    const log: Entry[] = [];
    const machine = runMachine.provide({
      actors: {
        findMissingBlobs: never(),
        prepare: never(),
        modelCall: stub("modelCall", log),
        toolRound: stub("toolRound", log),
        checkpoint: stub("checkpoint", log),
      },
      actions: {
        emitFrame: (_, { message }) => void log.push({ kind: "frame", message }),
        finish: (_, { end }) => void log.push({ kind: "finish", end }),
      },
    });
    const actor = createActor(machine, { input: { requestId: "r", conversationId: "c" }, clock, inspect }).start();
    return { record: log, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [
    s.context.end?.cause ?? null,
    s.context.gets.filter((g: { data?: Uint8Array }) => g.data).length,
    s.context.nextExecId > 1,
    s.context.callIndex > 0,
    // What the next step depends on only there: where a compaction goes next, whether a measure compacts.
    s.matches({ live: "compacting" }) ? s.context.prepared?.summarize === true : null,
    s.matches({ live: "measuring" }) ? s.context.belowWindow : null,
  ],
  payloads(type, s: AnyMachineSnapshot) {
    const interrupted = s.context.end !== undefined;
    if (/^xstate\.done\.actor\..*resolving$/.test(type))
      return [
        { type, output: [] },
        { type, output: [BLOB_ID] },
      ];
    if (/^xstate\.done\.actor\..*preparing$/.test(type))
      return [
        { type, output: prepared },
        { type, output: { ...prepared, resumeRound: [read] } },
        { type, output: { ...prepared, summarize: true } },
      ];
    // Under the threshold, or over it: the first time over it is a crossing.
    if (/^xstate\.done\.actor\..*measuring$/.test(type))
      return [
        { type, output: { estimate: 10, limit: 100, summarizable: 3 } },
        { type, output: { estimate: 200, limit: 100, summarizable: 3 } },
      ];
    if (/^xstate\.done\.actor\..*(finalizing|checkpointing)$/.test(type))
      return [
        { type, output: { ok: true, nextKvId: 6 } },
        { type, output: { ok: false, error: "client refused blob SET 2: disk full", nextKvId: 6 } },
      ];
    if (/^xstate\.error\.actor\./.test(type))
      return [
        {
          type,
          error: Object.assign(new Error("Bedrock credentials are not supported"), { code: "failed_precondition" }),
        },
        { type, error: Object.assign(new Error("run request without conversation_id"), { code: "invalid_argument" }) },
        { type, error: new Error("store error: SQLITE_BUSY") },
      ];
    switch (type) {
      case "xstate.done.actor.modelCall":
        // A stopped pass only follows the run's own STOP.
        if (interrupted)
          return [{ type, output: { ok: false, failure: { kind: "stopped", message: "model call stopped" } } }];
        // A summary call: a summary, an empty one, a provider failure, a tool call although none was offered.
        if (s.matches({ live: "compacting" }))
          return [
            {
              type,
              output: { ok: true, reason: "stop", assistant: { ...assistant, text: "summary" }, invocations: [] },
            },
            { type, output: { ok: true, reason: "stop", assistant, invocations: [] } },
            { type, output: { ok: false, failure: { kind: "provider", message: "HTTP 500" } } },
            { type, output: { ok: false, failure: { kind: "protocol", message: 'model called unknown tool "Read"' } } },
          ];
        return [
          { type, output: { ok: true, reason: "stop", assistant, invocations: [] } },
          {
            type,
            output: {
              ok: true,
              reason: "toolUse",
              assistant: { ...assistant, toolCalls: [read] },
              invocations: [read],
            },
          },
          { type, output: { ok: false, failure: { kind: "provider", message: "HTTP 500" } } },
          {
            type,
            output: { ok: false, failure: { kind: "protocol", message: 'model called unknown tool "Teleport"' } },
          },
        ];
      case "xstate.done.actor.toolRound":
        return interrupted
          ? [{ type, output: { outcome: { kind: "canceled", message: "canceled" }, nextExecId: 3, nextKvId: 4 } }]
          : [
              { type, output: { outcome: { kind: "ok" }, nextExecId: 3, nextKvId: 8 } },
              {
                type,
                output: { outcome: { kind: "protocol", message: "exec 1 threw: boom" }, nextExecId: 3, nextKvId: 4 },
              },
              {
                type,
                output: {
                  outcome: { kind: "checkpoint", message: "client refused blob SET 5: disk full" },
                  nextExecId: 3,
                  nextKvId: 8,
                },
              },
            ];
      case "KV_GET_RESULT":
        return [
          { type, id: 0, data: BLOB },
          { type, id: 0, data: new Uint8Array([1]) },
        ];
      case "KV_SET_RESULT":
        return [{ type, id: 0 }];
      case "CANCEL":
        return cancelCauses.map((cause) => ({ type, cause, reason: `canceled (${cause})` }));
      case "BACKLOG_EXCEEDED":
        return [{ type, message: "the run exceeded 100000 stream frames" }];
      case "CLIENT_EXEC":
        return [
          { type, id: 1, message: { case: undefined } },
          { type, id: 99, message: { case: undefined } },
        ];
      case "CLIENT_STREAM_CLOSE":
      case "CLIENT_THROW":
        return [{ type, id: 99, error: "late" }];
      case "CLIENT_INTERACTION":
        return [{ type, id: 99, answer: { case: undefined } }];
      default:
        return undefined;
    }
  },
  checkFinal({ record, snapshot }, trace) {
    const s = snapshot();
    const finishes = record.filter((e) => e.kind === "finish");
    expect(finishes.length, "exactly one terminal commit + EndStream").to.equal(1);
    expect(record.at(-1), "nothing after the end").to.equal(finishes[0]);
    const end = finishes[0]!.end;
    runEndsReached.set(end.kind === "succeeded" ? "succeeded" : end.cause, end);
    expect(end.kind).to.equal(s.value);
    if (end.kind === "failed") expect(end.code, end.cause).to.equal(failureCodes[end.cause]);
    if (end.kind === "canceled")
      expect(
        trace.some((e) => e.type === "CANCEL" && e.cause === end.cause),
        "canceled by a CANCEL of its cause",
      ).to.be.true;
    if (end.kind === "succeeded") {
      const types = trace.map((e) => e.type);
      expect(types.filter((t) => /finalizing$/.test(t)).length, "success only after the final checkpoint").to.equal(1);
    }
    expect(end, "the recorded end is the one finished").to.deep.equal(s.context.end);
    // An interruption while a child runs is passed to it first: STOP closes the model call, CANCEL aborts the round;
    // the child is told once, and nothing else is ever told to wind down.
    const told = record.filter(
      (e): e is Extract<Entry, { kind: "told" }> => e.kind === "told" && (e.type === "STOP" || e.type === "CANCEL"),
    );
    expect(told.length).to.be.at.most(1);
    for (const t of told) expect(`${t.child}:${t.type}`).to.be.oneOf(["modelCall:STOP", "toolRound:CANCEL"]);
  },
  lateEvents: [
    { type: "CANCEL", cause: "client", reason: "late" },
    { type: "BACKLOG_EXCEEDED", message: "late" },
    { type: "CLIENT_EXEC", id: 99, message: { case: undefined } },
    { type: "KV_SET_RESULT", id: 0 },
    { type: "KV_GET_RESULT", id: 0, data: BLOB },
  ] as SuppliedEvent[],
};
