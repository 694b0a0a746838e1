// Harness for ModelCall (docs/protocol/cursor-run.md §7.3, §7.4): the real machine with its frames recorded and a
// provider actor that does nothing; the path supplies the unified ModelEvents, provider errors, EOF and STOP.
import { expect } from "chai";
import { createActor, fromCallback } from "xstate";
import type { AgentServerMessage } from "../../../proto/gen/agent/v1/agent_pb.js";
import { modelCallMachine } from "../../../machines/model-call.js";
import type { ModelCallOutput } from "../../../machines/model-call-contract.js";
import type { ModelEvent } from "../../../providers/types.js";
import type { Harness, SuppliedEvent } from "../support/replay-graph.js";

const ARGS = '{"path":"a.txt"}';
const WRITE_ARGS = '{"path":"b.txt","contents":"new\\n"}';
const modelEvents: ModelEvent[] = [
  { type: "text_start" },
  { type: "text_delta", delta: "hi" },
  { type: "text_end" },
  { type: "thinking_start" },
  { type: "thinking_delta", delta: "hmm" },
  { type: "thinking_end" },
  { type: "toolcall_start", index: 0, id: "call_a", name: "Read" },
  { type: "toolcall_delta", index: 0, delta: ARGS },
  { type: "toolcall_end", index: 0, id: "call_a", name: "Read", argumentsJson: ARGS },
  { type: "toolcall_start", index: 1, id: "call_x", name: "Teleport" },
  // Write's argument text is projected live (an edit card with the path, then the content as deltas).
  { type: "toolcall_start", index: 2, id: "call_w", name: "Write" },
  { type: "toolcall_delta", index: 2, delta: WRITE_ARGS },
  { type: "usage", usage: { inputTokens: 10, outputTokens: 2 } },
  { type: "done", reason: "stop" },
  { type: "done", reason: "toolUse" },
  { type: "done", reason: "length" },
];

const kindOf = (m: AgentServerMessage): string =>
  m.message.case === "interactionUpdate" ? (m.message.value.message.case ?? "") : (m.message.case ?? "");

export const modelCallHarness: Harness<AgentServerMessage[]> = {
  name: "model-call",
  machine: modelCallMachine,
  coversEveryTransition: true,
  maxSimplePaths: 400,
  start(clock, inspect) {
    const emitted: AgentServerMessage[] = [];
    const machine = modelCallMachine.provide({
      actors: { providerStream: fromCallback(() => () => {}) },
      actions: { emitFrame: (_, { message }) => void emitted.push(message) },
    });
    const actor = createActor(machine, {
      inspect,
      input: { callIndex: 0, modelCallId: "r:0", toolNames: ["Read", "Write"] },
      clock,
    }).start();
    return { record: emitted, send: (e) => actor.send(e as never), snapshot: () => actor.getSnapshot() };
  },
  summary: (s) => [
    s.context.textOpen,
    s.context.thinkingStartedAt !== undefined,
    [...s.context.tools.values()].map((t: { ended: boolean }) => t.ended),
    s.context.usage !== undefined,
  ],
  payloads(type) {
    switch (type) {
      case "MODEL":
        return modelEvents.map((event) => ({ type, event }));
      case "PROVIDER_ERROR":
        return [{ type, message: "HTTP 500", aborted: false }];
      case "ARGS_PROJECTED":
        return []; // only its own projection children send these
      default:
        return undefined;
    }
  },
  checkFinal({ record, snapshot }, trace) {
    const s = snapshot();
    const output = s.output as ModelCallOutput;
    const kinds = record.map(kindOf);
    // No thinking segment is left open: each one is closed by thinking_completed with a real (≥ 1 ms) duration.
    expect(s.context.thinkingStartedAt).to.equal(undefined);
    const lastDelta = kinds.lastIndexOf("thinkingDelta");
    if (lastDelta >= 0)
      expect(kinds.indexOf("thinkingCompleted", lastDelta), "thinking closed before the end").to.be.greaterThan(
        lastDelta,
      );
    const opened = trace.filter((e) => (e.event as ModelEvent | undefined)?.type === "thinking_start").length;
    expect(kinds.filter((k) => k === "thinkingCompleted").length).to.be.at.most(opened);
    for (const m of record) {
      if (m.message.case === "interactionUpdate" && m.message.value.message.case === "thinkingCompleted") {
        expect(m.message.value.message.value.thinkingDurationMs).to.be.at.least(1);
      }
    }
    // Write's argument text showed up live as the edit card's content deltas.
    const at = (type: string) =>
      trace.findIndex((e) => {
        const ev = e.event as { type?: string; index?: number } | undefined;
        return ev?.type === type && ev.index === 2;
      });
    const wrote = at("toolcall_start") >= 0 && at("toolcall_delta") > at("toolcall_start");
    expect(kinds.includes("toolCallDelta"), "Write's content streamed as tool_call_delta").to.equal(wrote);
    if (s.value === "done") {
      expect(output.ok).to.equal(true);
      if (output.ok) expect(output.invocations.length).to.equal(output.reason === "toolUse" ? s.context.tools.size : 0);
    } else {
      expect(output.ok).to.equal(false);
      if (!output.ok) expect(output.failure.kind === "stopped").to.equal(s.value === "stopped");
    }
  },
  lateEvents: [
    { type: "MODEL", event: { type: "text_delta", delta: "late" } },
    { type: "PROVIDER_ERROR", message: "late", aborted: false },
    { type: "STOP" },
  ] as SuppliedEvent[],
};
