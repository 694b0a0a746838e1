// The Run machine's compaction decision (docs/protocol/cursor-run.md §8.10): a summary call happens when a measured
// request crosses the threshold — once per crossing, not on every call over it — and a summarize_action run is one
// compaction followed by the final checkpoint. The children are promise stubs that answer at once.
import { expect } from "chai";
import { createActor, fromPromise, waitFor } from "xstate";
import type { AgentServerMessage } from "../../proto/gen/agent/v1/agent_pb.js";
import { runMachine, type ContextMeasure, type PreparedRun, type RunEnd } from "../../machines/run.js";
import type { ModelCallInput, ModelCallOutput } from "../../machines/model-call-contract.js";
import type { CheckpointInput } from "../../machines/checkpoint.js";
import type { ToolInvocation } from "../../cursor/tools/types.js";

const read: ToolInvocation = { callId: "c1", modelCallId: "r:0", name: "Read", argumentsJson: "{}", args: {} };
const below: ContextMeasure = { estimate: 50, limit: 100, summarizable: 4 };
const over: ContextMeasure = { estimate: 150, limit: 100, summarizable: 4 };

/** Runs a turn of `answers` model calls (all but the last ask for a tool) against the scripted measures; returns
 * what each provider call was for, the checkpoints in order, the update frames and the end. */
async function runTurn(measures: ContextMeasure[], prepared: PreparedRun, answers: number) {
  const calls: string[] = [];
  const checkpoints: string[] = [];
  const updates: string[] = [];
  let answered = 0;
  let ended: RunEnd | undefined;
  const machine = runMachine.provide({
    actors: {
      findMissingBlobs: fromPromise(async (): Promise<Uint8Array[]> => []),
      prepare: fromPromise(async () => prepared),
      measureContext: fromPromise(async () => measures.shift()!),
      modelCall: fromPromise(async ({ input }: { input: ModelCallInput }): Promise<ModelCallOutput> => {
        calls.push(input.purpose ?? "answer");
        const assistant = { text: "text", toolCalls: [] };
        if (input.purpose === "summary") return { ok: true, reason: "stop", assistant, invocations: [], usage: {} };
        return ++answered < answers
          ? { ok: true, reason: "toolUse", assistant, invocations: [read], usage: {} }
          : { ok: true, reason: "stop", assistant, invocations: [], usage: {} };
      }) as never,
      toolRound: fromPromise(async () => ({
        outcome: { kind: "ok" },
        nextExecId: 2,
        nextInteractionId: 1,
        nextKvId: 0,
      })) as never,
      checkpoint: fromPromise(async ({ input }: { input: CheckpointInput }) => {
        checkpoints.push(input.kind);
        return { ok: true, nextKvId: 0 };
      }) as never,
    },
    actions: {
      emitFrame: (_, { message }: { message: AgentServerMessage }) => {
        if (message.message.case === "interactionUpdate") updates.push(message.message.value.message.case ?? "");
      },
      finish: (_, { end }) => void (ended = end),
    },
  });
  const actor = createActor(machine, { input: { requestId: "r", conversationId: "c" } }).start();
  await waitFor(actor, (s) => s.status === "done", { timeout: 2000 });
  return { calls, checkpoints, updates, end: ended };
}

describe("Run: compaction before a model call", () => {
  const prepared: PreparedRun = { toolNames: ["Read"], toolContext: { conversationId: "c" } };

  it("compacts once per crossing: not again while the requests stay over the threshold, again after one below", async () => {
    const measures = [below, over, over, over, below, over, below];
    const { calls, checkpoints, updates, end } = await runTurn(measures, prepared, 5);
    expect(end).to.deep.equal({ kind: "succeeded" });
    // measure: below → answer; over (crossing) → summary, over → answer; over → answer; below → answer;
    // over (crossing) → summary, below → answer.
    expect(calls).to.deep.equal(["answer", "summary", "answer", "answer", "answer", "summary", "answer"]);
    expect(checkpoints.filter((k) => k === "compacted")).to.have.length(2);
    expect(updates.filter((u) => u.startsWith("summary"))).to.deep.equal([
      "summaryStarted",
      "summary",
      "summaryCompleted",
      "summaryStarted",
      "summary",
      "summaryCompleted",
    ]);
  });

  it("does not compact a request over the threshold when nothing older than the kept turns is left", async () => {
    const { calls } = await runTurn([{ ...over, summarizable: 0 }], prepared, 1);
    expect(calls).to.deep.equal(["answer"]);
  });

  it("a summarize_action run is one summary call, its checkpoint, then the final checkpoint", async () => {
    const { calls, checkpoints, updates, end } = await runTurn([], { ...prepared, summarize: true }, 0);
    expect(end).to.deep.equal({ kind: "succeeded" });
    expect(calls).to.deep.equal(["summary"]);
    expect(checkpoints).to.deep.equal(["compacted", "final"]);
    expect(updates).to.deep.equal(["summaryStarted", "summary", "summaryCompleted"]);
  });
});
