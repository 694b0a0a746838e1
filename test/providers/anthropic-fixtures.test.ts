// Every recorded Anthropic Messages stream replayed over real HTTP must produce exactly the specified ModelEvent
// sequence, including the replay blocks (thinking with its signature, redacted_thinking data) byte for byte. Long
// texts are compared by SHA-256 and UTF-8 length; those digests were computed from the recordings with Python's
// json and hashlib, independently of the adapter.
import { expect } from "chai";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { createAnthropicAdapter } from "../../providers/anthropic.js";
import type { ModelEvent, ModelRequest } from "../../providers/types.js";
import { drain, fold, summarize, type FoldedEvent, foldedText } from "./model-events.js";
import { FIXTURES_DIR, readFixture, startReplayServer, type ReplayServer } from "./replay-server.js";

const REQUEST: ModelRequest = {
  model: "recorded",
  system: "You are terse.",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};
const KEY = "sk-ant-fixture-key";

const text = foldedText;

/** Replay blocks with long strings digested like the texts, so a whole recording's outcome reads as one spec. */
function digestReplay(events: FoldedEvent[]): FoldedEvent[] {
  return events.map((event) => {
    if (event.type !== "done" || event.replay?.provider !== "anthropic") return event;
    const blocks = event.replay.blocks.map((block) =>
      Object.fromEntries(
        Object.entries(block).map(([key, value]) => [key, typeof value === "string" ? summarize(value) : value]),
      ),
    );
    return { ...event, replay: { provider: "anthropic", blocks } };
  });
}

const EXPECTED: Record<string, FoldedEvent[]> = {
  "text.sse": [
    { type: "start" },
    ...text(4, "- Captain\n- Scoop"),
    { type: "usage", usage: { inputTokens: 17, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    { type: "done", reason: "stop" },
  ],
  "stop-sequence.sse": [
    { type: "start" },
    ...text(
      4,
      '\ndef pelican():\n    return "A large waterbird with a long bill and a throat pouch for catching fish."\n',
    ),
    { type: "usage", usage: { inputTokens: 16, outputTokens: 28, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    // The recording names the sequence that stopped it.
    { type: "done", reason: "stop", stopSequence: "```" },
  ],
  "thinking-then-text.sse": [
    { type: "start" },
    { type: "thinking_start" },
    // 14 thinking_delta records, one of them empty.
    {
      type: "thinking_delta",
      parts: 13,
      text: "sha256:18c2c6e0236da2b1a3064d5b63229aaafd9d7f0ada42d6737020cb2837ee1380:202",
    },
    { type: "thinking_end" },
    ...text(95, "sha256:1b0c432c3a48cc2829d6ff2b6e2c0f62881416d4583337d6f8a8a9a48ad73dfc:1021"),
    { type: "usage", usage: { inputTokens: 43, outputTokens: 282, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    {
      type: "done",
      reason: "stop",
      replay: {
        provider: "anthropic",
        blocks: [
          {
            type: "thinking",
            thinking: "sha256:18c2c6e0236da2b1a3064d5b63229aaafd9d7f0ada42d6737020cb2837ee1380:202",
            signature: "sha256:e2385f7486c5cf36abe909081fa9588d8a62e43339f699537f99e9b8a60e57a2:504",
          },
        ],
      },
    },
  ],
  "redacted-thinking-then-text.sse": [
    { type: "start" },
    // Redacted thinking has nothing to show; it only rides along for replay.
    ...text(15, "sha256:33e0d169251b911c3efe246fc3ae7eefee5090f9a6017f540195e89ab94da4a1:359"),
    { type: "usage", usage: { inputTokens: 92, outputTokens: 189, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    {
      type: "done",
      reason: "stop",
      replay: {
        provider: "anthropic",
        blocks: [
          {
            type: "redacted_thinking",
            data: "sha256:a5fcad0dab0d01897ed4a37854e87cd2c8a8dda62f9f9244faaa5292f78d1d25:744",
          },
          {
            type: "redacted_thinking",
            data: "sha256:f2ba85446010cd8c5930879e6b5216ddbeac2a82f325157d39eb4ef5ba886027:296",
          },
        ],
      },
    },
  ],
  "text-then-tool-use.sse": [
    { type: "start" },
    ...text(14, "sha256:366dcbcb0b9530eb196127782d0ab26b11827e618d12bbde5083bc575fee5484:333"),
    { type: "toolcall_start", index: 0, id: "toolu_016tMRxcvkC82nkYxLpk2cHm", name: "get_weather" },
    // The first input_json_delta is "": four fragments carry the input.
    { type: "toolcall_delta", index: 0, parts: 4, text: '{"location": "Madrid, Spain"}' },
    {
      type: "toolcall_end",
      index: 0,
      id: "toolu_016tMRxcvkC82nkYxLpk2cHm",
      name: "get_weather",
      argumentsJson: '{"location": "Madrid, Spain"}',
    },
    // The 2024 API reported input only in message_start and output only in message_delta.
    { type: "usage", usage: { inputTokens: 610, outputTokens: 131 } },
    { type: "done", reason: "toolUse" },
  ],
  "two-tool-use-empty-input.sse": [
    { type: "start" },
    { type: "toolcall_start", index: 0, id: "toolu_01LtHJmixrs9NcWQkK8hu8hj", name: "pelican_name_generator" },
    {
      type: "toolcall_end",
      index: 0,
      id: "toolu_01LtHJmixrs9NcWQkK8hu8hj",
      name: "pelican_name_generator",
      argumentsJson: "{}",
    },
    { type: "toolcall_start", index: 1, id: "toolu_01N8a4jWyf116qKTMqKKmjyt", name: "pelican_name_generator" },
    {
      type: "toolcall_end",
      index: 1,
      id: "toolu_01N8a4jWyf116qKTMqKKmjyt",
      name: "pelican_name_generator",
      argumentsJson: "{}",
    },
    { type: "usage", usage: { inputTokens: 542, outputTokens: 62, cacheReadTokens: 0, cacheWriteTokens: 0 } },
    { type: "done", reason: "toolUse" },
  ],
};

describe("Anthropic adapter replaying recorded streams", () => {
  let server: ReplayServer;
  let fixture = "";

  before(async () => {
    server = await startReplayServer(() => ({ body: readFixture(`anthropic/${fixture}`) }));
  });
  after(() => server.close());

  const adapterFor = (baseUrl: string) =>
    createAnthropicAdapter({ kind: "anthropic", baseUrl: baseUrl.replace(/\/v1$/, ""), apiKey: KEY });

  it("has an expectation for every recorded Anthropic fixture", () => {
    const recorded = readdirSync(join(FIXTURES_DIR, "anthropic")).filter((name) => name.endsWith(".sse"));
    expect(Object.keys(EXPECTED).sort()).to.deep.equal(recorded.sort());
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`turns ${name} into the exact event sequence`, async () => {
      fixture = name;
      const outcome = await drain(adapterFor(server.baseUrl), REQUEST);
      expect(outcome.error, outcome.error?.message).to.equal(undefined);
      expect(digestReplay(fold(outcome.events))).to.deep.equal(expected);
      expect(outcome.events.filter((event) => event.type === "usage")).to.have.length(1);
      const recorded = server.requests.at(-1)!;
      expect(recorded.url).to.equal("/v1/messages");
      expect(recorded.headers["x-api-key"]).to.equal(KEY);
      expect(recorded.headers["anthropic-version"]).to.equal("2023-06-01");
    });
  }

  it("keeps the thinking text of the replay block equal to the streamed thinking", async () => {
    fixture = "thinking-then-text.sse";
    const { events } = await drain(adapterFor(server.baseUrl), REQUEST);
    const streamed = events.flatMap((event) => (event.type === "thinking_delta" ? [event.delta] : [])).join("");
    const done = events.at(-1) as Extract<ModelEvent, { type: "done" }>;
    expect(done.replay).to.deep.include({ provider: "anthropic" });
    expect(done.replay?.provider === "anthropic" ? done.replay.blocks[0]?.thinking : undefined).to.equal(streamed);
  });

  it("produces the same events when the bytes arrive in small pieces", async () => {
    fixture = "thinking-then-text.sse";
    const whole = await drain(adapterFor(server.baseUrl), REQUEST);
    const pieces = await startReplayServer(() => ({ body: readFixture(`anthropic/${fixture}`), chunkSize: 7 }));
    try {
      const split = await drain(adapterFor(pieces.baseUrl), REQUEST);
      expect(split.error).to.equal(undefined);
      expect(split.events).to.deep.equal(whole.events);
    } finally {
      await pieces.close();
    }
  });
});
