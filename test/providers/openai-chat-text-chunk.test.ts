// The hand check for the common Chat chunk (one choice carrying only text) accepts nothing the chunk schema would
// refuse or read differently: whatever it lets through, the schema accepts with the same text and no other output.
import { expect } from "chai";
import fc from "fast-check";
import { ChunkSchema, isTextChunk } from "../../providers/openai-chat-stream.js";

/** Mostly absent (the common chunk), else a value of the right type, the wrong type or null. */
const field = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    good,
    fc.integer(),
    fc.string(),
    fc.constant(null),
    fc.constant([]),
    fc.constant({}),
  );
const mostly = <T>(usual: T, other: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(usual) }, other);

const delta = fc.record(
  {
    role: fc.constant("assistant"),
    content: fc.oneof({ weight: 3, arbitrary: fc.string() }, fc.constant(null), fc.integer()),
    refusal: field(fc.constant(null)),
    reasoning_content: field(fc.constant(null)),
    reasoning: field(fc.string()),
    tool_calls: field(fc.constant([{ index: 0, id: "c", function: { name: "Read", arguments: "" } }])),
  },
  { requiredKeys: ["role", "content"] },
);

const choice = fc.record(
  {
    index: mostly(0, fc.constantFrom(1, "0", null)),
    delta: fc.oneof({ weight: 3, arbitrary: delta }, fc.constant(null), fc.string()),
    finish_reason: mostly(null, fc.constantFrom("stop", 3, undefined)),
    logprobs: fc.constant(null),
  },
  { requiredKeys: [] },
);

const chunk = fc.record(
  {
    id: fc.string(),
    object: fc.constant("chat.completion.chunk"),
    choices: fc.oneof({ weight: 3, arbitrary: fc.tuple(choice) }, fc.array(choice, { maxLength: 2 }), fc.string()),
    usage: field(fc.constant({ prompt_tokens: 1 })),
  },
  { requiredKeys: ["choices"] },
);

describe("OpenAI Chat: the hand-checked text chunk", () => {
  it("accepts only chunks the schema accepts, with the same text and nothing else to decode", () => {
    let accepted = 0;
    fc.assert(
      fc.property(chunk, (value) => {
        if (!isTextChunk(value)) return;
        accepted++;
        const parsed = ChunkSchema.safeParse(value);
        expect(parsed.success, JSON.stringify(value)).to.equal(true);
        const [only, ...rest] = parsed.data?.choices ?? [];
        expect(rest).to.deep.equal([]);
        expect(parsed.data?.usage ?? null).to.equal(null);
        expect(only?.index).to.equal(0);
        expect(only?.finish_reason ?? null).to.equal(null);
        const { content, refusal, reasoning_content, reasoning, tool_calls } = only?.delta ?? {};
        expect(content).to.be.a("string");
        expect([refusal, reasoning_content, reasoning, tool_calls].every((v) => v == null)).to.equal(true);
      }),
      { numRuns: 2000 },
    );
    expect(accepted, "the generator reaches the accepted shape").to.be.greaterThan(20);
  });

  it("accepts the plain text chunk the providers stream", () => {
    const plain = {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: { content: "Hel" }, logprobs: null, finish_reason: null }],
    };
    expect(isTextChunk(plain)).to.equal(true);
    expect(isTextChunk({ ...plain, usage: { prompt_tokens: 3 } })).to.equal(false);
  });
});
