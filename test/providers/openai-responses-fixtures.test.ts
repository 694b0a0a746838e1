// Every recorded Responses API stream replayed over real HTTP must produce exactly the specified ModelEvent
// sequence (or the specified failure). Long texts are compared by SHA-256 and UTF-8 length, and the replay state
// by the digest of the `output_item.done` items as one JSON array; those digests were computed from the
// recordings with jq (`select(.type=="response.output_item.done") | .item`), independently of the adapter.
import { expect } from "chai";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { createOpenAIResponsesAdapter } from "../../providers/openai-responses.js";
import type { ModelRequest } from "../../providers/types.js";
import { digest, drain, fold, type FoldedEvent, foldedText, foldedThinking } from "./model-events.js";
import { FIXTURES_DIR, readFixture, startReplayServer, type ReplayServer } from "./replay-server.js";

const REQUEST: ModelRequest = {
  model: "recorded",
  system: "You are terse.",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};
const KEY = "sk-fixture-key";
const DIR = "openai-responses";

const text = foldedText;
const thinking = foldedThinking;
const call = (index: number, id: string, name: string, parts: number, args: string): FoldedEvent[] => [
  { type: "toolcall_start", index, id, name },
  { type: "toolcall_delta", index, parts, text: args },
  { type: "toolcall_end", index, id, name, argumentsJson: args },
];
/** The done event with its replay items reduced to `sha256:<hex>:<bytes>` of their JSON array. */
const done = (reason: "stop" | "toolUse", itemsDigest: string) => ({ type: "done", reason, replayItems: itemsDigest });

type Expected = { events: Array<FoldedEvent | ReturnType<typeof done>> } | { events: FoldedEvent[]; error: string };

const EXPECTED: Record<string, Expected> = {
  "text.sse": {
    events: [
      { type: "start" },
      ...text(7, "The capital of France is Paris."),
      { type: "usage", usage: { inputTokens: 278, outputTokens: 9, cacheReadTokens: 0, reasoningTokens: 0 } },
      done("stop", "sha256:5794d707405deb38298461a0698788cb3e3bdac75852a80bb89f9d36fe1a94a0:213"),
    ],
  },
  "function-call.sse": {
    events: [
      { type: "start" },
      ...call(0, "call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", 5, '{"country":"France"}'),
      { type: "usage", usage: { inputTokens: 255, outputTokens: 16, cacheReadTokens: 0, reasoningTokens: 0 } },
      done("toolUse", "sha256:6279deb00ee39c4f17ba4edfd29cc2b010c3b982c7fbf602f28b27a199a1c833:208"),
    ],
  },
  "reasoning-summary-multipart-then-text.sse": {
    events: [
      { type: "start" },
      // Four summary parts (86 + 100 + 101 + 96 deltas) shown as paragraphs joined by a blank line.
      ...thinking(383, "sha256:850ada24574b27f42b158f5c750bb1fcc5a6d5fbe0a5899e206aa378bd0bfa2f:2048"),
      ...text(271, "sha256:4242cea70d53d7d1eb50d239ff4eaa73c101b72b1198b763679653eaec7fd88b:1275"),
      { type: "usage", usage: { inputTokens: 13, outputTokens: 1680, cacheReadTokens: 0, reasoningTokens: 1408 } },
      done("stop", "sha256:b2bbec85269b58fa192ad60991207e762f269213b6a9ae728dca3376c969d2f7:4223"),
    ],
  },
  "reasoning-encrypted-then-function-call.sse": {
    events: [
      { type: "start" },
      // The reasoning item has no summary: nothing to show, but it is replayed (first item of the digest).
      ...call(0, "call_CWXgs68YprAjp6t0371hiPOI", "final_result", 6, '{"result":6666}'),
      { type: "usage", usage: { inputTokens: 53, outputTokens: 469, cacheReadTokens: 0, reasoningTokens: 448 } },
      done("toolUse", "sha256:4f59f0539419b3e15793c2babc85679dfb00188d15d3190072cfddcf9746be3d:4218"),
    ],
  },
  "codex-reasoning-summary-encrypted-function-call.sse": {
    events: [
      { type: "start" },
      ...thinking(32, "sha256:e8c4cd892aeccd1f8e73cda6a54a4a99b2a196820ce3b796f249d2aabb14a695:163"),
      ...call(0, "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", 13, '{"a":12,"b":7,"op":"add"}'),
      { type: "usage", usage: { inputTokens: 134, outputTokens: 28, cacheReadTokens: 0, reasoningTokens: 0 } },
      done("toolUse", "sha256:403464dae7b7c5bd33372365745f84ea886faf2ed98771f112c70702ae982743:1594"),
    ],
  },
  "deepseek-reasoning-text-function-call.sse": {
    events: [
      { type: "start" },
      ...thinking(14, "The user asks about temperature in Tokyo. I'll call the tool."),
      ...call(0, "call_00_xjY8Z2BvSlzgEmmw0DtH0464", "get_temperature", 9, '{"city": "Tokyo"}'),
      { type: "usage", usage: { inputTokens: 366, outputTokens: 59, cacheReadTokens: 256, reasoningTokens: 14 } },
      done("toolUse", "sha256:106f1b498b846f23e5b33eb9a93ed3b3b9cb30ad66c6d0248ba54a31f6871ee0:405"),
    ],
  },
  "error-event-then-failed.sse": {
    events: [{ type: "start" }],
    error:
      "responses stream reported an error: You exceeded your current quota, please check your plan and billing details. " +
      "For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors. (insufficient_quota)",
  },
};

/** Folds the events and reduces the replay items to one digest (they hold kilobytes of encrypted_content). */
function specify(events: Parameters<typeof fold>[0]) {
  return fold(events).map((event) => {
    if (event.type !== "done") return event;
    expect(event.replay?.provider).to.equal("openai-responses");
    const items = event.replay?.provider === "openai-responses" ? event.replay.items : [];
    return { type: "done", reason: event.reason, replayItems: digest(JSON.stringify(items)) };
  });
}

/** The `item` of every recorded event of one type, read straight from the fixture. */
function recordedItems(fixture: string, type: string): Array<Record<string, unknown>> {
  return readFixture(`${DIR}/${fixture}`)
    .toString("utf8")
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map(
      (line) =>
        JSON.parse(line.slice("data: ".length)) as {
          type: string;
          item?: Record<string, unknown>;
          response?: { output: unknown[] };
        },
    )
    .flatMap((event) =>
      event.type !== type ? [] : event.item ? [event.item] : (event.response?.output as Array<Record<string, unknown>>),
    );
}

describe("OpenAI Responses adapter replaying recorded streams", () => {
  let server: ReplayServer;
  let fixture = "";

  before(async () => {
    server = await startReplayServer(() => ({ body: readFixture(`${DIR}/${fixture}`) }));
  });
  after(() => server.close());

  const replay = async (name: string) => {
    fixture = name;
    return drain(
      createOpenAIResponsesAdapter({ kind: "openai-responses", baseUrl: server.baseUrl, apiKey: KEY }),
      REQUEST,
    );
  };

  it("has an expectation for every recorded Responses fixture", () => {
    const recorded = readdirSync(join(FIXTURES_DIR, DIR)).filter((name) => name.endsWith(".sse"));
    expect(Object.keys(EXPECTED).sort()).to.deep.equal(recorded.sort());
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`turns ${name} into the exact event sequence${"error" in expected ? " and failure" : ""}`, async () => {
      const outcome = await replay(name);
      expect(server.requests.at(-1)?.url).to.equal("/v1/responses");
      if ("error" in expected) {
        expect(outcome.error?.message).to.equal(expected.error);
        expect(outcome.error?.reason).to.equal("error");
        expect(fold(outcome.events)).to.deep.equal(expected.events);
        return;
      }
      expect(outcome.error, outcome.error?.message).to.equal(undefined);
      expect(specify(outcome.events)).to.deep.equal(expected.events);
    });
  }

  for (const name of [
    "reasoning-encrypted-then-function-call.sse",
    "codex-reasoning-summary-encrypted-function-call.sse",
  ]) {
    it(`replays ${name}'s reasoning with the encrypted_content of output_item.done, not of .added or completed`, async () => {
      const { events } = await replay(name);
      const last = events.at(-1)!;
      if (last.type !== "done" || last.replay?.provider !== "openai-responses")
        return expect.fail("expected a done with replay items");
      const [added] = recordedItems(name, "response.output_item.added");
      const [finished] = recordedItems(name, "response.output_item.done");
      const [completed] = recordedItems(name, "response.completed");
      const replayed = last.replay.items[0]!;
      expect(replayed.type).to.equal("reasoning");
      expect(replayed).to.deep.equal(finished);
      expect(replayed.encrypted_content).to.be.a("string").and.not.equal(added!.encrypted_content);
      expect(replayed.encrypted_content).to.not.equal(completed!.encrypted_content);
    });
  }

  it("produces the same events when the bytes arrive in small pieces (split UTF-8, split records)", async () => {
    const name = "reasoning-summary-multipart-then-text.sse";
    const whole = await replay(name);
    const pieces = await startReplayServer(() => ({ body: readFixture(`${DIR}/${name}`), chunkSize: 7 }));
    try {
      const adapter = createOpenAIResponsesAdapter({ kind: "openai-responses", baseUrl: pieces.baseUrl, apiKey: KEY });
      const split = await drain(adapter, REQUEST);
      expect(split.error).to.equal(undefined);
      expect(split.events).to.deep.equal(whole.events);
    } finally {
      await pieces.close();
    }
  });
});
