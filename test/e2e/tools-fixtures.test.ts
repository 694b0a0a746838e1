// Wire-level e2e with recorded provider streams (test/fixtures/providers) replayed through the real gateway.
// The recorded OpenAI tool-call streams call tools our agent manifest does not have (get_weather, get_country,
// get_product_name), so the OpenAI recording used is a plain text turn; DeepSeek's recorded reasoning stream covers
// thinking (docs/protocol/cursor-run.md §7.4), and a DeepSeek tool round checks that reasoning_content is replayed
// exactly (docs/protocol/cursor-run.md §8.5).
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { createWorkspace } from "../support/client-workspace.js";
import { textDeltas } from "../support/observed-frames.js";
import { fixturePath } from "../support/util.js";
import {
  assertCleanSuccess,
  assertPrefix,
  useToolsRig,
  updates,
  ROUND_CHECKPOINT,
  TURN_ENDINGS,
  sets,
} from "./tools-kit.js";

const textUsageChunk = fixturePath("providers/openai-chat/text-usage-chunk.sse");
const deepseekThinking = fixturePath("providers/openai-compatible/deepseek-reasoner-reasoning-content-then-text.sse");

interface Recorded {
  content: string[];
  reasoning: string[];
}

/** The non-empty content / reasoning_content deltas of a recorded Chat Completions stream, in order. */
function recordedDeltas(path: string): Recorded {
  const out: Recorded = { content: [], reasoning: [] };
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const chunk = JSON.parse(line.slice("data: ".length)) as {
      choices: Array<{ delta: { content?: string | null; reasoning_content?: string | null } }>;
    };
    for (const choice of chunk.choices) {
      if (choice.delta.content) out.content.push(choice.delta.content);
      if (choice.delta.reasoning_content) out.reasoning.push(choice.delta.reasoning_content);
    }
  }
  return out;
}

describe("e2e tools: recorded provider streams", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-fixtures");

  // The deltas of one provider read go out as one frame (engine/pass-events.ts), so frame counts follow the
  // network's chunking: kinds collapse repeated deltas, and the texts are compared joined.
  const streamed = { collapse: ["text_delta", "thinking_delta"] };

  it("replays a recorded OpenAI text turn: the content reaches the client as text_delta, in order, the turn ends ok", async () => {
    const recorded = recordedDeltas(textUsageChunk);
    const fake = await rig.fake({ fixture: textUsageChunk, splitBytes: 97 });
    const { client, run } = rig.start(fake, { text: "invent a holiday" });
    await run.done;

    expect(run.kinds(streamed)).to.deep.equal([
      "text_delta",
      "token_delta",
      "step_completed",
      ...sets(6),
      ...TURN_ENDINGS,
    ]);
    assertCleanSuccess(run, client);
    expect(textDeltas(run.frames).join("")).to.equal(recorded.content.join(""));
    expect(textDeltas(run.frames).join("")).to.match(/^\*\*Holiday Name:\*\* Harmony Day\n\n[\s\S]*mutual respect\.$/);
    const [turnEnded] = updates(run, "turnEnded");
    expect(turnEnded).to.deep.include({
      inputTokens: 16n,
      outputTokens: 300n,
      cacheReadTokens: 0n,
      reasoningTokens: 0n,
    });
    expect(run.lastCheckpoint()!.tokenDetails?.usedTokens).to.equal(316);
  });

  it("replays DeepSeek's recorded reasoning: thinking_delta…, one thinking_completed (≥ 1 ms), then the text", async () => {
    const recorded = recordedDeltas(deepseekThinking);
    const fake = await rig.fake({ fixture: deepseekThinking, splitBytes: 211 });
    const { client, run } = rig.start(fake, { text: "hi", modelId: "deepseek-reasoner" });
    await run.done;

    expect(run.kinds(streamed)).to.deep.equal([
      "thinking_delta",
      "thinking_completed",
      "text_delta",
      "token_delta",
      "step_completed",
      ...sets(7),
      ...TURN_ENDINGS,
    ]);
    assertCleanSuccess(run, client);
    expect(
      updates(run, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).to.equal(recorded.reasoning.join(""));
    const completed = updates(run, "thinkingCompleted");
    expect(completed).to.have.length(1);
    expect(completed[0]!.thinkingDurationMs).to.be.at.least(1);
    expect(textDeltas(run.frames).join("")).to.equal("Hello there! 😊 How can I help you today?");
    expect(fake.requests[0]!.body.model).to.equal("deepseek-reasoner");
    const [turnEnded] = updates(run, "turnEnded");
    expect(turnEnded).to.deep.include({
      inputTokens: 6n,
      outputTokens: 212n,
      cacheReadTokens: 0n,
      reasoningTokens: 198n,
    });
  });

  it("replays a DeepSeek tool round's reasoning_content exactly in the next request, then finishes on the recording", async () => {
    const reasoning = 'The user wants "config.json".\nI will Read it — then answer. 🔍\r\n(keep this byte-exact)';
    const fake = await rig.fake(
      {
        reasoning,
        toolCalls: [{ id: "call_ds_read", name: "Read", args: { path: "config.json" } }],
        usage: { prompt_tokens: 30, completion_tokens: 12, completion_tokens_details: { reasoning_tokens: 9 } },
        chunkSize: 7,
      },
      { fixture: deepseekThinking },
    );
    const workspace = createWorkspace({ "config.json": '{"debug":true}\n' });
    const { client, run } = rig.start(fake, {
      text: "what is in config.json?",
      modelId: "deepseek-reasoner",
      workspace,
    });
    await run.done;

    assertCleanSuccess(run, client);
    const recording = recordedDeltas(deepseekThinking);
    const pieces = (text: string) => Math.ceil(Array.from(text).length / 7);
    expect(run.kinds(streamed)).to.deep.equal([
      "thinking_delta",
      "thinking_completed",
      "partial_tool_call",
      ...Array(pieces('{"path":"config.json"}')).fill("partial_tool_call"),
      "token_delta",
      "kv_set",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...ROUND_CHECKPOINT,
      "thinking_delta",
      "thinking_completed",
      "text_delta",
      "token_delta",
      "step_completed",
      ...sets(4),
      ...TURN_ENDINGS,
    ]);
    expect(updates(run, "thinkingCompleted")).to.have.length(2);
    expect(
      updates(run, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).to.equal(reasoning + recording.reasoning.join(""));

    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!) as Array<Record<string, unknown>>;
    expect(added).to.deep.equal([
      {
        role: "assistant",
        content: null,
        reasoning_content: reasoning,
        tool_calls: [
          { id: "call_ds_read", type: "function", function: { name: "Read", arguments: '{"path":"config.json"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_ds_read", content: '{"debug":true}\n' },
    ]);
    const [turnEnded] = updates(run, "turnEnded");
    expect(turnEnded).to.deep.include({
      inputTokens: 36n,
      outputTokens: 224n,
      cacheReadTokens: 0n,
      reasoningTokens: 207n,
    });
  });
});
