// Contract of the Anthropic stream rendering (messages-api/render.ts): event order, consecutive block indexes,
// input_json_delta concatenating to the tool input, stop_reason mapping, usage, and the signed replay block.
import { expect } from "chai";
import { MessageAssembler } from "../../messages-api/assemble.js";
import { MessageRenderer, type StreamEvent } from "../../messages-api/render.js";
import { createSignatureCodec } from "../../messages-api/signature.js";
import type { DoneReason, ModelEvent } from "../../providers/types.js";

const codec = createSignatureCodec(Buffer.alloc(32, 7));

function render(events: ModelEvent[]): StreamEvent[] {
  const renderer = new MessageRenderer("msg_test", "claude-sonnet-4-5", codec);
  return [renderer.start(), ...events.flatMap((e) => renderer.accept(e))];
}

const done = (reason: DoneReason): ModelEvent => ({ type: "done", reason });
const usage: ModelEvent = { type: "usage", usage: { inputTokens: 120, outputTokens: 30, cacheReadTokens: 100 } };

function toolInputs(events: StreamEvent[]): Map<number, string> {
  const inputs = new Map<number, string>();
  for (const e of events) {
    if (e.type === "content_block_delta" && e.delta.type === "input_json_delta")
      inputs.set(e.index, (inputs.get(e.index) ?? "") + e.delta.partial_json);
  }
  return inputs;
}

describe("messages-api: stream rendering contract", () => {
  it("renders text then a tool call in order with consecutive indexes", () => {
    const events = render([
      { type: "start" },
      { type: "text_start" },
      { type: "text_delta", delta: "Let me " },
      { type: "text_delta", delta: "look." },
      { type: "text_end" },
      { type: "toolcall_start", index: 0, id: "call_1", name: "Bash" },
      { type: "toolcall_delta", index: 0, delta: '{"comm' },
      { type: "toolcall_delta", index: 0, delta: 'and":"ls"}' },
      { type: "toolcall_end", index: 0, id: "call_1", name: "Bash", argumentsJson: '{"command":"ls"}' },
      usage,
      done("toolUse"),
    ]);
    expect(events.map((e) => `${e.type}${"index" in e ? `:${e.index}` : ""}`)).to.deep.equal([
      "message_start",
      "content_block_start:0",
      "content_block_delta:0",
      "content_block_delta:0",
      "content_block_stop:0",
      "content_block_start:1",
      "content_block_delta:1",
      "content_block_delta:1",
      "content_block_stop:1",
      "message_delta",
      "message_stop",
    ]);
    expect(JSON.parse(toolInputs(events).get(1)!)).to.deep.equal({ command: "ls" });
    const delta = events.find((e) => e.type === "message_delta");
    expect(delta).to.deep.include({ delta: { stop_reason: "tool_use", stop_sequence: null } });
    // Anthropic's input_tokens excludes cache reads; ours is the whole prompt.
    expect(delta).to.deep.include({ usage: { input_tokens: 20, output_tokens: 30, cache_read_input_tokens: 100 } });
  });

  it("sends parallel calls one block each, the later one whole at its end", () => {
    const events = render([
      { type: "toolcall_start", index: 0, id: "a", name: "Read" },
      { type: "toolcall_delta", index: 0, delta: '{"path":' },
      { type: "toolcall_start", index: 1, id: "b", name: "Bash" },
      { type: "toolcall_delta", index: 1, delta: '{"command":"pwd"}' },
      { type: "toolcall_delta", index: 0, delta: '"x"}' },
      { type: "toolcall_end", index: 0, id: "a", name: "Read", argumentsJson: '{"path":"x"}' },
      { type: "toolcall_end", index: 1, id: "b", name: "Bash", argumentsJson: '{"command":"pwd"}' },
      done("toolUse"),
    ]);
    const starts = events.filter((e) => e.type === "content_block_start");
    expect(starts.map((e) => [e.index, (e.content_block as { id: string }).id])).to.deep.equal([
      [0, "a"],
      [1, "b"],
    ]);
    const inputs = toolInputs(events);
    expect([inputs.get(0), inputs.get(1)]).to.deep.equal(['{"path":"x"}', '{"command":"pwd"}']);
    const order = events.map((e) => e.type).filter((t) => t.startsWith("content_block_s"));
    expect(order).to.deep.equal([
      "content_block_start",
      "content_block_stop",
      "content_block_start",
      "content_block_stop",
    ]);
  });

  it("completes arguments the deltas did not carry (no arguments means {})", () => {
    const events = render([
      { type: "toolcall_start", index: 0, id: "a", name: "Ls" },
      { type: "toolcall_end", index: 0, id: "a", name: "Ls", argumentsJson: "{}" },
      done("toolUse"),
    ]);
    expect(toolInputs(events).get(0)).to.equal("{}");
  });

  for (const [reason, stop] of [
    ["stop", "end_turn"],
    ["toolUse", "tool_use"],
    ["length", "max_tokens"],
  ] as const) {
    it(`maps done(${reason}) to stop_reason ${stop}`, () => {
      const last = render([
        { type: "text_start" },
        { type: "text_delta", delta: "x" },
        { type: "text_end" },
        done(reason),
      ]);
      expect(last.at(-2)).to.deep.include({ delta: { stop_reason: stop, stop_sequence: null } });
      expect(last.at(-1)).to.deep.equal({ type: "message_stop" });
    });
  }

  it("maps a stop the endpoint names a stop sequence for to stop_sequence, in both forms", () => {
    const events = render([
      { type: "text_start" },
      { type: "text_delta", delta: "a b" },
      { type: "text_end" },
      { type: "done", reason: "stop", stopSequence: "END" },
    ]);
    expect(events.at(-2)).to.deep.include({ delta: { stop_reason: "stop_sequence", stop_sequence: "END" } });
    const assembler = new MessageAssembler();
    for (const e of events) assembler.accept(e);
    expect(assembler.result()).to.deep.include({ stop_reason: "stop_sequence", stop_sequence: "END" });
  });

  it("signs thinking blocks and carries replay state in a redacted_thinking block that opens again", () => {
    const replay = { provider: "openai-chat" as const, reasoningContent: "Think about ls." };
    const events = render([
      { type: "thinking_start" },
      { type: "thinking_delta", delta: "Think about ls." },
      { type: "thinking_end" },
      { type: "text_start" },
      { type: "text_delta", delta: "Done." },
      { type: "text_end" },
      { type: "done", reason: "stop", replay },
    ]);
    const assembler = new MessageAssembler();
    for (const e of events) assembler.accept(e);
    const message = assembler.result();
    expect(message.content.map((b) => (b as { type: string }).type)).to.deep.equal([
      "thinking",
      "text",
      "redacted_thinking",
    ]);
    const carried = message.content[2] as { data: string };
    expect(codec.openReplay(carried.data)).to.deep.equal(replay);
    expect(codec.openReplay((message.content[0] as { signature: string }).signature)).to.equal(undefined);
    const forged = carried.data.replace(/\.[^.]+$/, ".AAAA");
    expect(codec.openReplay(forged)).to.equal(undefined);
    expect(createSignatureCodec(Buffer.alloc(32, 8)).openReplay(carried.data)).to.equal(undefined);
  });

  it("assembles the non-streaming message with the parsed tool input and usage", () => {
    const assembler = new MessageAssembler();
    for (const e of render([
      { type: "toolcall_start", index: 0, id: "a", name: "Bash" },
      { type: "toolcall_delta", index: 0, delta: '{"command":"ls"}' },
      { type: "toolcall_end", index: 0, id: "a", name: "Bash", argumentsJson: '{"command":"ls"}' },
      usage,
      done("toolUse"),
    ]))
      assembler.accept(e);
    expect(assembler.result()).to.deep.include({
      content: [{ type: "tool_use", id: "a", name: "Bash", input: { command: "ls" } }],
      stop_reason: "tool_use",
      usage: { input_tokens: 20, output_tokens: 30, cache_read_input_tokens: 100 },
    });
  });
});
