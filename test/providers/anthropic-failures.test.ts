// The strict contract of docs/protocol/cursor-run.md §7.3 for Anthropic Messages streams: HTTP failures, `error`
// events, bare EOF, unclosed or foreign blocks, bad tool input, stop reasons other than end_turn / stop_sequence /
// tool_use, and cancellation all end in ProviderError, never in a `done`; pings and unknown event types are skipped;
// usage is folded from message_start and message_delta into exactly one event.
import { expect } from "chai";
import { createAnthropicAdapter } from "../../providers/anthropic.js";
import type { ModelEvent, ModelRequest, ProviderAdapter } from "../../providers/types.js";
import { drain } from "./model-events.js";
import { startReplayServer, type ReplayServer, type ScriptedResponse } from "./replay-server.js";

const KEY = "sk-ant-test-SECRET-81c3";
const REQUEST: ModelRequest = {
  model: "claude-test",
  system: "sys",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};

type Payload = { type: string; [field: string]: unknown };
type RawRecord = { event: string; raw: string };

/** Anthropic's framing: each record names its event, and the data repeats the type. */
const sse = (...records: Array<Payload | RawRecord>) =>
  records
    .map((r) =>
      "raw" in r ? `event: ${r.event}\ndata: ${r.raw}\n\n` : `event: ${r.type}\ndata: ${JSON.stringify(r)}\n\n`,
    )
    .join("");

const messageStart = (usage: object = { input_tokens: 10, output_tokens: 1 }): Payload => ({
  type: "message_start",
  message: {
    id: "msg_test",
    type: "message",
    role: "assistant",
    content: [],
    model: "claude-test",
    stop_reason: null,
    usage,
  },
});
const blockStart = (index: number, block: object): Payload => ({
  type: "content_block_start",
  index,
  content_block: block,
});
const delta = (index: number, body: object): Payload => ({ type: "content_block_delta", index, delta: body });
const blockStop = (index: number): Payload => ({ type: "content_block_stop", index });
const messageDelta = (stopReason: string | null, usage: object = { output_tokens: 7 }): Payload => ({
  type: "message_delta",
  delta: { stop_reason: stopReason, stop_sequence: null },
  usage,
});
const messageStop: Payload = { type: "message_stop" };
const ping: Payload = { type: "ping" };
const textBlock = (index: number, text: string): Payload[] => [
  blockStart(index, { type: "text", text: "" }),
  delta(index, { type: "text_delta", text }),
  blockStop(index),
];
const toolBlock = (index: number, id: string, input: string): Payload[] => [
  blockStart(index, { type: "tool_use", id, name: "Read", input: {} }),
  delta(index, { type: "input_json_delta", partial_json: input }),
  blockStop(index),
];

describe("Anthropic adapter failures and edge cases", () => {
  let server: ReplayServer;
  let script: ScriptedResponse = {};
  let adapter: ProviderAdapter;

  before(async () => {
    server = await startReplayServer(() => script);
    adapter = createAnthropicAdapter({ kind: "anthropic", baseUrl: server.baseUrl.replace(/\/v1$/, ""), apiKey: KEY });
  });
  after(() => server.close());

  const run = async (response: ScriptedResponse, signal?: AbortSignal) => {
    script = response;
    return drain(adapter, REQUEST, signal);
  };
  const stream = (...records: Array<Payload | RawRecord>) => run({ body: sse(...records) });
  const types = (events: ModelEvent[]) => events.map((event) => event.type);

  describe("HTTP status", () => {
    it("fails an HTTP 529 with the status and Anthropic's error message, never the key", async () => {
      const body = JSON.stringify({
        type: "error",
        error: { type: "overloaded_error", message: `Overloaded (key ${KEY})` },
      });
      const { events, error } = await run({ status: 529, contentType: "application/json", body });
      expect(events).to.deep.equal([]);
      expect(error?.status).to.equal(529);
      expect(error?.message).to.include("529").and.include("Overloaded").and.not.include(KEY);
    });
  });

  describe("events", () => {
    it("skips pings anywhere, even before message_start, and event types it does not know", async () => {
      const { events, error } = await stream(
        ping,
        messageStart(),
        ping,
        blockStart(0, { type: "text", text: "" }),
        ping,
        delta(0, { type: "text_delta", text: "hi" }),
        { type: "some_future_event", detail: 1 },
        blockStop(0),
        ping,
        messageDelta("end_turn"),
        ping,
        messageStop,
      );
      expect(error).to.equal(undefined);
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta", "text_end", "usage", "done"]);
    });

    it("fails an error event mid-stream with its type and message, after what arrived", async () => {
      const { events, error } = await stream(
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        delta(0, { type: "text_delta", text: "Hel" }),
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
      );
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta"]);
      expect(error?.reason).to.equal("error");
      expect(error?.message).to.include("overloaded_error: Overloaded");
    });

    it("fails an `event: error` record even when its data is not JSON", async () => {
      const { error } = await stream(messageStart(), { event: "error", raw: "upstream connect error" });
      expect(error?.message).to.include("upstream connect error");
    });

    it("fails data that is not a JSON object", async () => {
      const { error } = await stream(messageStart(), { event: "content_block_delta", raw: "[1,2]" });
      expect(error?.message).to.include("non-object event");
    });

    it("fails content before message_start, and a second message_start", async () => {
      const early = await stream(...textBlock(0, "x"));
      expect(early.error?.message).to.include("before message_start");
      const twice = await stream(messageStart(), messageStart());
      expect(twice.error?.message).to.include("message_start twice");
    });

    it("fails a content block type it cannot carry instead of dropping it", async () => {
      const { error } = await stream(
        messageStart(),
        blockStart(0, { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }),
      );
      expect(error?.message).to.include('unsupported content block type "server_tool_use"');
    });

    it("fails a delta for a block that is not open, and a delta of the wrong kind", async () => {
      const closed = await stream(messageStart(), ...textBlock(0, "x"), delta(0, { type: "text_delta", text: "late" }));
      expect(closed.error?.message).to.include("block 0, which is not open");
      const wrong = await stream(
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        delta(0, { type: "input_json_delta", partial_json: "{}" }),
      );
      expect(wrong.error?.message).to.include("input_json_delta inside a text block");
      const redacted = await stream(
        messageStart(),
        blockStart(0, { type: "redacted_thinking", data: "opaque" }),
        delta(0, { type: "thinking_delta", thinking: "x" }),
      );
      expect(redacted.error?.message).to.include("thinking_delta inside a redacted_thinking block");
    });
  });

  describe("end of stream", () => {
    it("fails a bare EOF mid-text after yielding what arrived", async () => {
      const { events, error } = await stream(
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        delta(0, { type: "text_delta", text: "Hel" }),
      );
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta"]);
      expect(error?.message).to.include("without message_stop").and.include("open text block 0");
    });

    it("fails EOF after message_delta when message_stop never came", async () => {
      const { events, error } = await stream(messageStart(), ...textBlock(0, "ok"), messageDelta("end_turn"));
      expect(types(events)).not.to.include("done");
      expect(error?.message).to.include("stop_reason end_turn");
    });

    it("fails message_stop inside an open block or without a stop_reason", async () => {
      const open = await stream(messageStart(), blockStart(0, { type: "text", text: "" }), messageStop);
      expect(open.error?.message).to.include("inside an open block");
      const noReason = await stream(messageStart(), ...textBlock(0, "ok"), messageDelta(null), messageStop);
      expect(noReason.error?.message).to.include("without a stop_reason");
    });

    it("stops reading at message_stop even if the server keeps the connection open", async () => {
      const { events, error } = await run({
        body: sse(messageStart(), ...textBlock(0, "ok"), messageDelta("end_turn"), messageStop),
        then: "hang",
      });
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
    });
  });

  describe("stop reasons", () => {
    it("fails max_tokens as a ProviderError after reporting the usage it spent, never a done", async () => {
      const { events, error } = await stream(
        messageStart(),
        ...textBlock(0, "trunc"),
        messageDelta("max_tokens", { output_tokens: 4096 }),
        messageStop,
      );
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta", "text_end", "usage"]);
      expect(error?.reason).to.equal("error");
      expect(error?.message).to.include("max_tokens");
    });

    for (const reason of ["refusal", "pause_turn", "model_context_window_exceeded"]) {
      it(`fails stop_reason ${reason}`, async () => {
        const { events, error } = await stream(messageStart(), ...textBlock(0, "x"), messageDelta(reason), messageStop);
        expect(types(events)).not.to.include("done");
        expect(error?.message).to.include(reason);
      });
    }

    it("fails tool_use without a tool_use block, and end_turn after tool_use blocks", async () => {
      const noCalls = await stream(messageStart(), ...textBlock(0, "x"), messageDelta("tool_use"), messageStop);
      expect(noCalls.error?.message).to.include("no tool_use block");
      const endTurn = await stream(
        messageStart(),
        ...toolBlock(0, "toolu_1", "{}"),
        messageDelta("end_turn"),
        messageStop,
      );
      expect(endTurn.error?.message).to.include('"end_turn" after 1 tool_use block');
    });
  });

  describe("tool_use", () => {
    it("fails input that is not a JSON object", async () => {
      const broken = await stream(messageStart(), ...toolBlock(0, "toolu_1", '{"path": "a.ts"'));
      expect(types(broken.events)).not.to.include("toolcall_end");
      expect(broken.error?.message).to.include("toolu_1").and.include("not a JSON object");
      const array = await stream(messageStart(), ...toolBlock(0, "toolu_1", "[1]"));
      expect(array.error?.message).to.include("not a JSON object");
    });

    it("ends each call at its own block stop, numbering calls in order after a text block", async () => {
      const { events, error } = await stream(
        messageStart(),
        ...textBlock(0, "Reading."),
        ...toolBlock(1, "toolu_a", '{"path":"a.ts"}'),
        ...toolBlock(2, "toolu_b", '{"path":"b.ts"}'),
        messageDelta("tool_use"),
        messageStop,
      );
      expect(error).to.equal(undefined);
      expect(events.filter((e) => e.type.startsWith("toolcall"))).to.deep.equal([
        { type: "toolcall_start", index: 0, id: "toolu_a", name: "Read" },
        { type: "toolcall_delta", index: 0, delta: '{"path":"a.ts"}' },
        { type: "toolcall_end", index: 0, id: "toolu_a", name: "Read", argumentsJson: '{"path":"a.ts"}' },
        { type: "toolcall_start", index: 1, id: "toolu_b", name: "Read" },
        { type: "toolcall_delta", index: 1, delta: '{"path":"b.ts"}' },
        { type: "toolcall_end", index: 1, id: "toolu_b", name: "Read", argumentsJson: '{"path":"b.ts"}' },
      ]);
    });

    it("fails a tool_use block without an id or name, and a block started while another is open", async () => {
      const noId = await stream(messageStart(), blockStart(0, { type: "tool_use", id: "", name: "Read", input: {} }));
      expect(noId.error?.message).to.include("malformed tool_use block");
      const overlap = await stream(
        messageStart(),
        blockStart(0, { type: "text", text: "" }),
        blockStart(1, { type: "text", text: "" }),
      );
      expect(overlap.error?.message).to.include("while block 0 is open");
    });
  });

  describe("usage", () => {
    it("folds message_start and message_delta into one usage, with cache reads and writes in the prompt total", async () => {
      const start = {
        input_tokens: 50,
        cache_read_input_tokens: 1000,
        cache_creation_input_tokens: 200,
        output_tokens: 1,
      };
      const { events, error } = await stream(
        messageStart(start),
        ...textBlock(0, "x"),
        messageDelta("end_turn", { output_tokens: 20 }),
        messageStop,
      );
      expect(error).to.equal(undefined);
      expect(events.filter((e) => e.type === "usage")).to.deep.equal([
        { type: "usage", usage: { inputTokens: 1250, outputTokens: 20, cacheReadTokens: 1000, cacheWriteTokens: 200 } },
      ]);
    });

    it("takes message_delta's cumulative counts over message_start's", async () => {
      const start = { input_tokens: 50, cache_read_input_tokens: 0, output_tokens: 1 };
      const final = { input_tokens: 60, cache_read_input_tokens: 5, output_tokens: 30 };
      const { events } = await stream(
        messageStart(start),
        ...textBlock(0, "x"),
        messageDelta("end_turn", final),
        messageStop,
      );
      expect(events.find((e) => e.type === "usage")).to.deep.equal({
        type: "usage",
        usage: { inputTokens: 65, outputTokens: 30, cacheReadTokens: 5 },
      });
    });

    it("ends without a usage event when the stream reported none", async () => {
      const { events, error } = await stream(
        messageStart({}),
        ...textBlock(0, "x"),
        messageDelta("end_turn", {}),
        messageStop,
      );
      expect(error).to.equal(undefined);
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta", "text_end", "done"]);
    });
  });

  describe("cancellation", () => {
    it("aborts while waiting for response headers", async () => {
      const controller = new AbortController();
      const before = server.requests.length;
      const pending = run({ neverRespond: true }, controller.signal);
      while (server.requests.length === before) await new Promise((resolve) => setImmediate(resolve));
      controller.abort();
      const { events, error } = await pending;
      expect(events).to.deep.equal([]);
      expect(error?.reason).to.equal("aborted");
    });

    it("aborts while reading the body", async () => {
      const controller = new AbortController();
      script = {
        body: sse(
          messageStart(),
          blockStart(0, { type: "thinking", thinking: "", signature: "" }),
          delta(0, { type: "thinking_delta", thinking: "hmm" }),
        ),
        then: "hang",
      };
      const events: ModelEvent[] = [];
      let caught: unknown;
      try {
        await adapter.stream(REQUEST, controller.signal, (event) => {
          events.push(event);
          if (event.type === "thinking_delta") controller.abort();
        });
      } catch (error) {
        caught = error;
      }
      expect(types(events)).to.deep.equal(["start", "thinking_start", "thinking_delta"]);
      expect(caught).to.have.property("reason", "aborted");
    });
  });
});
