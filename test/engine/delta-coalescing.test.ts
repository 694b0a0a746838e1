// The deltas one provider read decodes reach the ModelCall as at most two events and the client as at most two
// frames: the turn's first delta at once (no timer before the first token, issue 17), the rest merged; block
// boundaries and tool calls are never crossed, so kinds keep their order (issue 6 follow-up).
import { expect } from "chai";
import { createActor } from "xstate";
import type { AgentServerMessage } from "../../proto/gen/agent/v1/agent_pb.js";
import { modelCallMachine } from "../../machines/model-call.js";
import type { ModelCallOutput } from "../../machines/model-call-contract.js";
import type { ModelEvent } from "../../providers/types.js";
import { coalesceDeltas } from "../../engine/delta-coalescer.js";
import { providerStream } from "../../engine/run-wiring.js";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A provider pass whose events arrive in reads: all events of one read in one turn, the next read a turn later. */
function scriptedReads(reads: ModelEvent[][]) {
  return {
    async *stream(): AsyncIterable<ModelEvent> {
      for (const [i, read] of reads.entries()) {
        if (i > 0) await nextTurn();
        yield* read;
      }
    },
  };
}

/** What Cursor sees of a frame: its kind and, for streamed text, the text. */
function kindOf(m: AgentServerMessage): string {
  if (m.message.case !== "interactionUpdate") return String(m.message.case);
  const u = m.message.value.message;
  if (u.case === "textDelta") return `text:${u.value.text}`;
  if (u.case === "thinkingDelta") return `thinking:${u.value.text}`;
  return String(u.case);
}

async function runPass(reads: ModelEvent[][]): Promise<{ frames: string[]; output: ModelCallOutput }> {
  const emitted: string[] = [];
  const machine = modelCallMachine.provide({
    actors: { providerStream: providerStream(() => scriptedReads(reads) as never) },
    actions: { emitFrame: (_, { message }) => void emitted.push(kindOf(message)) },
  });
  const actor = createActor(machine, { input: { callIndex: 0, modelCallId: "r:0", toolNames: ["Read"] } });
  const done = new Promise<ModelCallOutput>((resolve) =>
    actor.subscribe({ complete: () => resolve(actor.getSnapshot().output!) }),
  );
  actor.start();
  return { frames: emitted, output: await done };
}

const text = (delta: string): ModelEvent => ({ type: "text_delta", delta });
const thinking = (delta: string): ModelEvent => ({ type: "thinking_delta", delta });

describe("delta coalescing (one provider read → its first delta at once, the rest as one frame)", () => {
  it("sends a read's first text delta at once and the rest of that read as one text_delta frame", async () => {
    const { frames, output } = await runPass([
      [{ type: "start" }, { type: "text_start" }, text("Hel"), text("lo"), text(", ")],
      [text("wor"), text("ld")],
      [{ type: "text_end" }, { type: "usage", usage: { outputTokens: 5 } }, { type: "done", reason: "stop" }],
    ]);
    expect(frames.filter((f) => f.startsWith("text:"))).to.deep.equal(["text:Hel", "text:lo, ", "text:wor", "text:ld"]);
    expect(output.ok && output.assistant.text).to.equal("Hello, world");
  });

  it("never merges across a block boundary or a tool call, and keeps the kinds in order", async () => {
    const { frames, output } = await runPass([
      [
        { type: "thinking_start" },
        thinking("a"),
        thinking("b"),
        { type: "thinking_end" },
        { type: "text_start" },
        text("x"),
        text("y"),
        { type: "text_end" },
        { type: "toolcall_start", index: 0, id: "call_1", name: "Read" },
        { type: "toolcall_delta", index: 0, delta: '{"path":' },
        { type: "toolcall_delta", index: 0, delta: '"a.txt"}' },
        { type: "toolcall_end", index: 0, id: "call_1", name: "Read", argumentsJson: '{"path":"a.txt"}' },
        { type: "text_start" },
        text("z"),
        { type: "text_end" },
        { type: "done", reason: "toolUse" },
      ],
    ]);
    const streamed = frames.filter(
      (f) => f.startsWith("text:") || f.startsWith("thinking:") || f === "thinkingCompleted" || f === "partialToolCall",
    );
    expect(streamed).to.deep.equal([
      "thinking:a",
      "thinking:b",
      "thinkingCompleted",
      "text:xy",
      "partialToolCall",
      "partialToolCall",
      "partialToolCall",
      "text:z",
    ]);
    expect(output.ok && output.assistant.text).to.equal("xyz");
  });

  it("delivers the held delta before a provider failure, and drops it when the pass is stopped", async () => {
    const sent: ModelEvent[] = [];
    const c = coalesceDeltas((e) => sent.push(e));
    c.push(text("a"));
    expect(sent, "the turn's first delta waits for nothing").to.deep.equal([text("a")]);
    c.push(text("b"));
    c.push(text("c"));
    c.flush();
    expect(sent).to.deep.equal([text("a"), text("bc")]);
    c.push(text("d"));
    c.drop();
    await nextTurn();
    expect(sent).to.deep.equal([text("a"), text("bc")]);
  });
});
