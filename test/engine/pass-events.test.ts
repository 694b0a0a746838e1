// A provider pass's events on their way to the ModelCall and the client (engine/pass-events.ts): the deltas one read
// decodes go out as at most two frames, the read's first at once (no timer before the first token, issue 17), the
// rest merged; an open text block reaches the machine as one TEXT event, not one event per delta; block boundaries
// and tool calls are never crossed, so kinds keep their order (issue 6 follow-up).
import { expect } from "chai";
import { createActor } from "xstate";
import type { AgentServerMessage } from "../../proto/gen/agent/v1/agent_pb.js";
import { modelCallMachine } from "../../machines/model-call.js";
import type { ModelCallOutput } from "../../machines/model-call-contract.js";
import type { ModelEvent } from "../../providers/types.js";
import { passEvents } from "../../engine/pass-events.js";
import type { ModelCallEvent } from "../../machines/model-call.js";
import { providerStream } from "../../engine/run-wiring.js";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A provider pass whose events arrive in reads: all events of one read in one turn, each read a turn after the one
 * before it — the first too, as a real call's first read follows its response head.
 */
function scriptedReads(reads: ModelEvent[][]) {
  return {
    async stream(_callIndex: number, _signal: AbortSignal, sink: (event: ModelEvent) => void): Promise<void> {
      for (const read of reads) {
        await nextTurn();
        for (const event of read) sink(event);
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

async function runPass(
  reads: ModelEvent[][],
  purpose?: "summary",
): Promise<{ frames: string[]; output: ModelCallOutput; events: string[] }> {
  const emitted: string[] = [];
  const events: string[] = [];
  const emit = (message: AgentServerMessage) => void emitted.push(kindOf(message));
  const machine = modelCallMachine.provide({
    actors: {
      providerStream: providerStream(() => ({
        session: scriptedReads(reads) as never,
        out: { emitTextDelta: (text) => void emitted.push(`text:${text}`) },
      })),
    },
    actions: { emitFrame: (_, { message }) => emit(message) },
  });
  const actor = createActor(machine, {
    input: { callIndex: 0, modelCallId: "r:0", toolNames: ["Read"], ...(purpose ? { purpose } : {}) },
    inspect: (e) => {
      if (e.type === "@xstate.event" && e.actorRef === actor) events.push(received(e.event as ModelCallEvent));
    },
  });
  const done = new Promise<ModelCallOutput>((resolve) =>
    actor.subscribe({ complete: () => resolve(actor.getSnapshot().output!) }),
  );
  actor.start();
  return { frames: emitted, output: await done, events };
}

/** An event the ModelCall received, as the tests compare it. */
function received(e: ModelCallEvent): string {
  if (e.type === "MODEL") return e.event.type === "text_delta" ? `text_delta:${e.event.delta}` : e.event.type;
  return e.type === "TEXT" ? `TEXT:${e.text}` : e.type;
}

const text = (delta: string): ModelEvent => ({ type: "text_delta", delta });
const thinking = (delta: string): ModelEvent => ({ type: "thinking_delta", delta });

describe("a provider pass's events (one read → its first delta at once, the rest as one frame; a text block → one TEXT)", () => {
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

  it("hands the machine an open block's text as one TEXT event before the block's next event", async () => {
    const { events, frames, output } = await runPass([
      [{ type: "start" }, { type: "text_start" }, text("a"), text("b")],
      [text("c")],
      [text("d"), { type: "text_end" }, { type: "done", reason: "stop" }],
    ]);
    expect(events.filter((e) => e !== "xstate.init")).to.deep.equal([
      "start",
      "text_start",
      "TEXT:abcd",
      "text_end",
      "done",
    ]);
    expect(frames.filter((f) => f.startsWith("text:"))).to.deep.equal(["text:a", "text:b", "text:c", "text:d"]);
    expect(output.ok && output.assistant.text).to.equal("abcd");
  });

  it("shows nothing of a summary pass, whose text still reaches the machine", async () => {
    const { frames, output } = await runPass(
      [
        [{ type: "text_start" }, text("sum"), text("mary")],
        [{ type: "text_end" }, { type: "done", reason: "stop" }],
      ],
      "summary",
    );
    expect(frames).to.deep.equal([]);
    expect(output.ok && output.assistant.text).to.equal("summary");
  });

  it("passes a text delta outside a text block to the machine, which fails the pass", async () => {
    const { events, output } = await runPass([[{ type: "start" }, text("stray"), { type: "done", reason: "stop" }]]);
    expect(events).to.include("text_delta:stray");
    expect(output.ok).to.equal(false);
    expect(!output.ok && output.failure.message).to.match(/text delta outside a text block/);
  });

  it("handles the rest of a read a microtask after its first delta, so that delta's frame leaves first", async () => {
    const sent: string[] = [];
    const shown: string[] = [];
    /** What a writer that uncorks in a microtask, queued at the first frame, would write. */
    let firstWrite: string[] | undefined;
    const lane = passEvents({
      send: (e) => sent.push(e.type === "MODEL" ? e.event.type : e.type),
      show: (text) => {
        if (shown.push(text) === 1) queueMicrotask(() => (firstWrite = [...shown]));
      },
    });
    for (const event of [
      { type: "text_start" },
      text("a"),
      text("b"),
      text("c"),
      { type: "text_end" },
      { type: "done", reason: "stop" },
    ] as ModelEvent[])
      lane.push(event);
    expect(shown).to.deep.equal(["a"]);
    expect(sent).to.deep.equal(["text_start"]);
    await Promise.resolve();
    expect(firstWrite).to.deep.equal(["a"]);
    expect(shown).to.deep.equal(["a", "bc"]);
    expect(sent).to.deep.equal(["text_start", "TEXT", "text_end", "done"]);
  });

  it("delivers what it holds before a provider failure, and drops it when the pass is stopped", async () => {
    const sent: ModelCallEvent[] = [];
    const shown: string[] = [];
    const lane = passEvents({ send: (e) => sent.push(e), show: (text) => shown.push(`text:${text}`) });
    lane.push({ type: "text_start" });
    lane.push(text("a"));
    expect(shown, "the read's first delta waits for nothing").to.deep.equal(["text:a"]);
    lane.push(text("b"));
    lane.push(text("c"));
    lane.flush();
    expect(shown).to.deep.equal(["text:a", "text:bc"]);
    expect(sent).to.deep.equal([
      { type: "MODEL", event: { type: "text_start" } },
      { type: "TEXT", text: "abc" },
    ]);
    await nextTurn();
    lane.push(text("d"));
    lane.push(text("e"));
    lane.drop();
    await nextTurn();
    expect(shown).to.deep.equal(["text:a", "text:bc", "text:d"]);
    lane.flush();
    expect(sent, "a stopped pass hands nothing more to the machine").to.have.length(2);
  });
});
