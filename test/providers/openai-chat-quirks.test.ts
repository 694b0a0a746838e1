// Every OpenAI Chat / OpenAI-compatible quirk named in the providers issue, one test each. Where a recording shows
// the quirk, the test first checks that the recording really has it, then replays it; where none does, the quirk is
// made by editing a recording minimally (the edit is stated). No quirk may crash the adapter or become a silent
// success: each ends in the exact events or in a ProviderError.
import { expect } from "chai";
import { createOpenAIChatAdapter } from "../../providers/openai-chat.js";
import type { ModelEvent, ModelRequest } from "../../providers/types.js";
import { drain, type StreamOutcome } from "./model-events.js";
import { readFixture, startReplayServer, type ReplayServer } from "./replay-server.js";

const REQUEST: ModelRequest = {
  model: "recorded",
  system: "s",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};

/** The JSON payloads of a recording's `data:` records, [DONE] left out. */
function chunks(body: string): Array<Record<string, any>> {
  return body
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice("data: ".length)) as Record<string, any>);
}

const recording = (name: string) => readFixture(name).toString("utf8");
const types = (events: ModelEvent[]) => events.map((event) => event.type);
const usages = (events: ModelEvent[]) => events.filter((event) => event.type === "usage");
const toolEvents = (events: ModelEvent[]) => events.filter((event) => event.type.startsWith("toolcall"));

describe("OpenAI Chat quirks from the recordings", () => {
  let server: ReplayServer;
  let body = "";

  before(async () => {
    server = await startReplayServer(() => ({ body }));
  });
  after(() => server.close());

  const replay = async (text: string): Promise<StreamOutcome> => {
    body = text;
    return drain(createOpenAIChatAdapter({ kind: "openai-chat", baseUrl: server.baseUrl, apiKey: "k" }), REQUEST);
  };
  const succeeds = async (text: string): Promise<ModelEvent[]> => {
    const outcome = await replay(text);
    expect(outcome.error, outcome.error?.message).to.equal(undefined);
    return outcome.events;
  };

  describe("usage", () => {
    it("in a separate final chunk with empty choices (OpenAI)", async () => {
      const text = recording("openai-chat/text-usage-chunk.sse");
      const last = chunks(text).at(-1)!;
      expect(last.choices).to.deep.equal([]);
      expect(last.usage.prompt_tokens).to.equal(16);
      const events = await succeeds(text);
      expect(usages(events)).to.deep.equal([
        { type: "usage", usage: { inputTokens: 16, outputTokens: 300, cacheReadTokens: 0, reasoningTokens: 0 } },
      ]);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
    });

    it("inside the finish chunk (DeepSeek, Z.ai)", async () => {
      for (const name of [
        "openai-compatible/deepseek-reasoner-reasoning-content-then-text.sse",
        "openai-compatible/zai-glm-reasoning-content-then-text.sse",
      ]) {
        const text = recording(name);
        const finish = chunks(text).find((c) => c.choices?.[0]?.finish_reason)!;
        expect(finish.usage, name).to.be.an("object");
        const events = await succeeds(text);
        expect(usages(events), name).to.have.length(1);
        expect(types(events).slice(-2), name).to.deep.equal(["usage", "done"]);
      }
    });

    it("after the finish chunk, in a chunk whose choices are not empty (OpenRouter)", async () => {
      const text = recording("openai-compatible/openrouter-reasoning-details-comments.sse");
      const last = chunks(text).at(-1)!;
      expect(last.choices).to.have.length(1);
      expect(last.choices[0].finish_reason).to.equal(null);
      expect(last.usage.prompt_tokens).to.equal(43);
      const events = await succeeds(text);
      expect(usages(events)).to.deep.equal([
        { type: "usage", usage: { inputTokens: 43, outputTokens: 36, cacheReadTokens: 0, reasoningTokens: 13 } },
      ]);
    });

    it("duplicated in one chunk, top-level and inside x_groq (Groq): one usage event", async () => {
      const text = recording("openai-compatible/groq-gpt-oss-reasoning-then-tool-call.sse");
      const finish = chunks(text).find((c) => c.choices?.[0]?.finish_reason)!;
      expect(finish.usage.prompt_tokens).to.equal(finish.x_groq.usage.prompt_tokens);
      expect(usages(await succeeds(text))).to.deep.equal([
        { type: "usage", usage: { inputTokens: 304, outputTokens: 49, reasoningTokens: 23 } },
      ]);
    });

    it("duplicated as a second identical usage chunk: one usage event (edit: the usage record sent twice)", async () => {
      const text = recording("openai-chat/text-then-tool-call.sse");
      const usageRecord = text.split("\n\n").find((record) => record.includes('"usage":{'))!;
      const events = await succeeds(text.replace(usageRecord, `${usageRecord}\n\n${usageRecord}`));
      expect(usages(events)).to.have.length(1);
    });

    it("duplicated with different totals is an error (edit: the second copy's completion_tokens changed)", async () => {
      const text = recording("openai-chat/text-then-tool-call.sse");
      const usageRecord = text.split("\n\n").find((record) => record.includes('"usage":{'))!;
      const changed = usageRecord.replace('"completion_tokens":32', '"completion_tokens":33');
      expect(changed).not.to.equal(usageRecord);
      const { events, error } = await replay(text.replace(usageRecord, `${usageRecord}\n\n${changed}`));
      expect(types(events)).not.to.include("done");
      expect(error?.message).to.include("usage twice");
    });

    it("followed by an extra empty-choices chunk (OpenAI moderation)", async () => {
      const text = recording("openai-chat/extra-empty-choices-chunk-after-usage.sse");
      const [usageChunk, extra] = chunks(text).slice(-2);
      expect(usageChunk!.usage).to.be.an("object");
      expect(extra!.choices).to.deep.equal([]);
      expect(extra!.usage).to.equal(null);
      const events = await succeeds(text);
      expect(types(events).slice(-2)).to.deep.equal(["usage", "done"]);
    });
  });

  it("Azure's first chunk with empty id, model and choices", async () => {
    const text = recording("openai-chat/azure-content-filter-results.sse");
    const first = chunks(text)[0]!;
    expect([first.id, first.model, first.choices]).to.deep.equal(["", "", []]);
    const events = await succeeds(text);
    expect(types(events).slice(0, 2)).to.deep.equal(["start", "text_start"]);
  });

  describe("finish_reason", () => {
    it("missing as a key on every chunk but the finish chunk (xAI)", async () => {
      const text = recording("openai-compatible/xai-grok-reasoning-content-then-text.sse");
      const withChoices = chunks(text).filter((c) => c.choices?.length);
      expect(withChoices.filter((c) => !("finish_reason" in c.choices[0])).length).to.be.greaterThan(300);
      expect((await succeeds(text)).at(-1)).to.deep.include({ type: "done", reason: "stop" });
    });

    it("missing altogether before [DONE] is an error, not a success (edit: the finish chunk removed)", async () => {
      const text = recording("openai-chat/text-then-tool-call.sse");
      const finishRecord = text.split("\n\n").find((record) => record.includes('"finish_reason":"tool_calls"'))!;
      const { events, error } = await replay(text.replace(`${finishRecord}\n\n`, ""));
      expect(types(events)).not.to.include("done");
      expect(error?.message).to.include("[DONE] before finishing").and.include("1 unclosed tool call");
    });

    it("repeated in a later chunk gives the same outcome as once (edit: the finish chunk sent twice)", async () => {
      const text = recording("openai-chat/text-then-tool-call.sse");
      const finishRecord = text.split("\n\n").find((record) => record.includes('"finish_reason":"tool_calls"'))!;
      const once = await succeeds(text);
      expect(await succeeds(text.replace(finishRecord, `${finishRecord}\n\n${finishRecord}`))).to.deep.equal(once);
    });

    it("`stop` after a forced tool call still ends in the calls (edit: tool_calls → stop)", async () => {
      const text = recording("openai-chat/parallel-tool-calls-empty-args.sse");
      const forced = text.replace('"finish_reason":"tool_calls"', '"finish_reason":"stop"');
      expect(forced).not.to.equal(text);
      const events = await succeeds(forced);
      expect(toolEvents(events).filter((e) => e.type === "toolcall_end")).to.have.length(2);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "toolUse" });
      expect(events).to.deep.equal(await succeeds(text));
    });

    it("a different second finish_reason is an error (edit: a length chunk after the stop chunk)", async () => {
      const text = recording("openai-chat/extra-empty-choices-chunk-after-usage.sse");
      const finishRecord = text.split("\n\n").find((record) => record.includes('"finish_reason":"stop"'))!;
      const { error } = await replay(
        text.replace(finishRecord, `${finishRecord}\n\n${finishRecord.replace('"stop"', '"length"')}`),
      );
      expect(error?.message).to.include('second finish_reason "length"');
    });
  });

  describe("tool calls", () => {
    it("indices starting at 1 keep their index (edit: index 0 → 1)", async () => {
      const text = recording("openai-compatible/xai-grok-reasoning-content-then-tool-call.sse");
      const shifted = text.replace('"index":0,"type":"function"', '"index":1,"type":"function"');
      expect(shifted).not.to.equal(text);
      const events = await succeeds(shifted);
      expect(toolEvents(events)).to.deep.equal([
        { type: "toolcall_start", index: 1, id: "call_79382389", name: "weather" },
        { type: "toolcall_delta", index: 1, delta: '{"location":"San Francisco"}' },
        {
          type: "toolcall_end",
          index: 1,
          id: "call_79382389",
          name: "weather",
          argumentsJson: '{"location":"San Francisco"}',
        },
      ]);
      expect(events.at(-1)).to.deep.include({ type: "done", reason: "toolUse" });
    });

    it("the whole call in one delta (xAI, Groq)", async () => {
      for (const name of [
        "openai-compatible/xai-grok-reasoning-content-then-tool-call.sse",
        "openai-compatible/groq-gpt-oss-reasoning-then-tool-call.sse",
      ]) {
        const text = recording(name);
        const toolChunks = chunks(text).filter((c) => c.choices?.[0]?.delta?.tool_calls);
        expect(toolChunks, name).to.have.length(1);
        const call = toolChunks[0]!.choices[0].delta.tool_calls[0];
        expect(
          [typeof call.id, typeof call.function.name, typeof JSON.parse(call.function.arguments)],
          name,
        ).to.deep.equal(["string", "string", "object"]);
        const events = await succeeds(text);
        expect(types(toolEvents(events)), name).to.deep.equal(["toolcall_start", "toolcall_delta", "toolcall_end"]);
      }
    });

    it('empty arguments "" then "{}" (OpenAI parallel calls)', async () => {
      const text = recording("openai-chat/parallel-tool-calls-empty-args.sse");
      const fragments = chunks(text)
        .flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? [])
        .map((t: any) => t.function.arguments);
      expect(fragments).to.deep.equal(["", "{}", "", "{}"]);
      const ends = toolEvents(await succeeds(text)).filter((e) => e.type === "toolcall_end");
      expect(ends.map((e) => (e.type === "toolcall_end" ? e.argumentsJson : ""))).to.deep.equal(["{}", "{}"]);
    });

    it('empty arguments "" alone end as {} (edit: the "{}" fragments removed)', async () => {
      const text = recording("openai-chat/parallel-tool-calls-empty-args.sse");
      const records = text.split("\n\n").filter((record) => !record.includes('"function":{"arguments":"{}"}'));
      const ends = toolEvents(await succeeds(records.join("\n\n"))).filter((e) => e.type === "toolcall_end");
      expect(ends.map((e) => (e.type === "toolcall_end" ? e.argumentsJson : ""))).to.deep.equal(["{}", "{}"]);
    });
  });

  describe("reasoning", () => {
    const thinkingText = (events: ModelEvent[]) =>
      events.flatMap((e) => (e.type === "thinking_delta" ? [e.delta] : [])).join("");

    it("as reasoning_content (DeepSeek, xAI, Z.ai): shown and kept for replay", async () => {
      for (const name of [
        "openai-compatible/deepseek-reasoner-reasoning-content-then-text.sse",
        "openai-compatible/xai-grok-reasoning-content-then-text.sse",
        "openai-compatible/zai-glm-reasoning-content-then-text.sse",
      ]) {
        const recorded = chunks(recording(name))
          .map((c) => c.choices?.[0]?.delta?.reasoning_content ?? "")
          .join("");
        const events = await succeeds(recording(name));
        expect(thinkingText(events), name).to.equal(recorded);
        expect(events.at(-1), name).to.deep.include({
          replay: { provider: "openai-chat", reasoningContent: recorded },
        });
      }
    });

    it("as reasoning plus reasoning_details (OpenRouter): shown once, not replayed", async () => {
      const text = recording("openai-compatible/openrouter-reasoning-details-comments.sse");
      const deltas = chunks(text).map((c) => c.choices?.[0]?.delta ?? {});
      expect(deltas.some((d) => d.reasoning_details?.length > 0 && d.reasoning)).to.equal(true);
      const events = await succeeds(text);
      expect(thinkingText(events)).to.equal(deltas.map((d) => d.reasoning ?? "").join(""));
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
    });

    it("as reasoning with a channel (Groq gpt-oss)", async () => {
      const text = recording("openai-compatible/groq-gpt-oss-reasoning-then-tool-call.sse");
      const deltas = chunks(text).map((c) => c.choices?.[0]?.delta ?? {});
      expect(deltas.some((d) => d.channel === "analysis" && d.reasoning)).to.equal(true);
      expect(thinkingText(await succeeds(text))).to.equal(deltas.map((d) => d.reasoning ?? "").join(""));
    });
  });

  it("`: comment` lines between records (OpenRouter)", async () => {
    const text = recording("openai-compatible/openrouter-reasoning-details-comments.sse");
    expect(text.split("\n").filter((line) => line.startsWith(": OPENROUTER PROCESSING"))).to.have.length(4);
    expect(types(await succeeds(text))).to.include("done");
  });

  describe("errors in the stream", () => {
    const cut = (name: string) => {
      const records = recording(name).split("\n\n");
      return records.slice(0, Math.floor(records.length / 2)).join("\n\n");
    };

    it("an in-band error object mid-stream (edit: the recording cut in half, then an error chunk)", async () => {
      const text = `${cut("openai-compatible/openrouter-reasoning-details-comments.sse")}\n\ndata: {"error":{"message":"Provider returned error","code":502}}\n\ndata: [DONE]\n\n`;
      const { events, error } = await replay(text);
      expect(types(events)).to.include("start").and.not.include("done");
      expect(error?.message).to.include("Provider returned error");
    });

    it("an `event: error` record, whatever its data (edit: the recording cut in half, then the record)", async () => {
      for (const data of ['{"message":"upstream timed out"}', "upstream timed out"]) {
        const text = `${cut("openai-chat/text-usage-chunk.sse")}\n\nevent: error\ndata: ${data}\n\ndata: [DONE]\n\n`;
        const { events, error } = await replay(text);
        expect(types(events), data).not.to.include("done");
        expect(error?.message, data).to.include("upstream timed out");
      }
    });
  });

  it("refusal deltas become the visible answer, not an empty success", async () => {
    const text = recording("openai-chat/refusal-with-logprobs.sse");
    const deltas = chunks(text).map((c) => c.choices?.[0]?.delta ?? {});
    expect(deltas.every((d) => !d.content)).to.equal(true);
    const refusal = deltas.map((d) => d.refusal ?? "").join("");
    const events = await succeeds(text);
    expect(events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("")).to.equal(refusal);
    expect(refusal).to.include("can't assist");
  });
});
