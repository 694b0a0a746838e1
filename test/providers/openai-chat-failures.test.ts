// The strict contract of docs/protocol/cursor-run.md §7.3: HTTP failures, bare EOF, unclosed blocks, bad tool
// arguments, a second usage, unknown finish reasons and cancellation all end in ProviderError, never in a `done`.
import { expect } from "chai";
import { Readable } from "node:stream";
import { createOpenAIChatAdapter } from "../../providers/openai-chat.js";
import type { ModelEvent, ModelRequest, ProviderAdapter } from "../../providers/types.js";
import { chatChunk, drain, sseBody, usageChunk } from "./model-events.js";
import { startReplayServer, type ReplayServer, type ScriptedResponse } from "./replay-server.js";

const KEY = "sk-test-SECRET-4f9a";
const REQUEST: ModelRequest = {
  model: "gpt-test",
  system: "sys",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};
const DONE = "[DONE]";
const finish = (reason: string) => chatChunk({}, reason);
const text = (content: string) => chatChunk({ content });
const toolStart = (index: number, id: string | undefined, name: string | undefined, args = "") => {
  const fn = { ...(name === undefined ? {} : { name }), arguments: args };
  return chatChunk({ tool_calls: [{ index, ...(id === undefined ? {} : { id, type: "function" }), function: fn }] });
};
const toolArgs = (index: number, args: string) => chatChunk({ tool_calls: [{ index, function: { arguments: args } }] });

describe("OpenAI Chat adapter failures and edge cases", () => {
  let server: ReplayServer;
  let script: ScriptedResponse = {};
  let adapter: ProviderAdapter;

  before(async () => {
    server = await startReplayServer(() => script);
    adapter = createOpenAIChatAdapter({ kind: "openai-chat", baseUrl: server.baseUrl, apiKey: KEY });
  });
  after(() => server.close());

  const run = async (response: ScriptedResponse, signal?: AbortSignal) => {
    script = response;
    return drain(adapter, REQUEST, signal);
  };
  const stream = (...payloads: Array<object | string>) => run({ body: sseBody(...payloads) });
  const types = (events: ModelEvent[]) => events.map((event) => event.type);

  describe("HTTP status", () => {
    const jsonError = (message: string, extra: object = {}) => JSON.stringify({ error: { message, ...extra } });

    it("fails an HTTP 500 with the status and the provider's message", async () => {
      const message = "The server had an error while processing your request.";
      const { events, error } = await run({ status: 500, contentType: "application/json", body: jsonError(message) });
      expect(events).to.deep.equal([]);
      expect(error?.reason).to.equal("error");
      expect(error?.status).to.equal(500);
      expect(error?.message).to.include("500").and.include(message);
    });

    it("fails a 401 without repeating the key, even when the provider echoes it", async () => {
      const body = jsonError(`Incorrect API key provided: ${KEY}.`, { code: "invalid_api_key" });
      const { error } = await run({ status: 401, contentType: "application/json", body });
      expect(error?.status).to.equal(401);
      expect(error?.message).to.include("401").and.include("Incorrect API key provided");
      expect(error?.message).not.to.include(KEY);
    });

    it("never quotes part of the key, even one the quote's length limit would cut in two", async () => {
      const body = jsonError(`${"x".repeat(490)} ${KEY} is not a valid key`);
      const { error } = await run({ status: 401, contentType: "application/json", body });
      expect(error?.message).to.include("xxx");
      expect(error?.message).not.to.include(KEY.slice(0, 8));
    });

    it("names every address of a connection that failed on all of them", async () => {
      // node reports a name with several addresses that all refuse as an AggregateError without a message.
      const refused = new AggregateError(
        [new Error("connect ECONNREFUSED ::1:1"), new Error("connect ECONNREFUSED 127.0.0.1:1")],
        "",
      );
      const adapter = createOpenAIChatAdapter(
        { kind: "openai-chat", baseUrl: "http://localhost:1/v1", apiKey: KEY },
        async () => Promise.reject(refused),
      );
      const { error } = await drain(adapter, REQUEST);
      expect(error?.reason).to.equal("error");
      expect(error?.message).to.equal(
        "provider request failed: connect ECONNREFUSED ::1:1; connect ECONNREFUSED 127.0.0.1:1",
      );
    });

    it("reads only the start of a huge error body, then cancels it", async () => {
      const chunk = Buffer.from("x".repeat(64 * 1024));
      let pulled = 0;
      let canceled = false;
      const body = new Readable({
        read() {
          if (pulled >= 256) return void this.push(null); // 16 MiB
          pulled++;
          this.push(chunk);
        },
        destroy(error, callback) {
          canceled = true;
          callback(error);
        },
      });
      const huge = createOpenAIChatAdapter(
        { kind: "openai-chat", baseUrl: "http://provider.invalid", apiKey: KEY },
        async () => ({ status: 500, contentType: "text/plain", body }),
      );
      const { error } = await drain(huge, REQUEST);
      expect(error?.status).to.equal(500);
      expect(error?.message).to.include("xxx");
      expect(pulled).to.be.at.most(4);
      expect(canceled).to.equal(true);
    });

    it("quotes a non-JSON error body", async () => {
      const { error } = await run({ status: 502, contentType: "text/html", body: "<html>Bad gateway</html>" });
      expect(error?.status).to.equal(502);
      expect(error?.message).to.include("<html>Bad gateway</html>");
    });

    it("fails a 200 that carries a JSON error instead of a stream", async () => {
      const { error } = await run({ contentType: "application/json", body: jsonError("stream unsupported") });
      expect(error?.reason).to.equal("error");
      expect(error?.message).to.include("stream unsupported");
    });
  });

  describe("end of stream", () => {
    it("fails a bare EOF mid-text after yielding what arrived", async () => {
      const { events, error } = await stream(chatChunk({ role: "assistant", content: "Hel" }));
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta"]);
      expect(error?.reason).to.equal("error");
      expect(error?.message).to.include("without [DONE]").and.include("open text block");
    });

    it("fails a connection cut mid-stream as an error, not a cancellation", async () => {
      const { events, error } = await run({ body: sseBody(text("Hel")), then: "destroy" });
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta"]);
      expect(error?.reason).to.equal("error");
    });

    it("fails an unclosed tool call at EOF without ending it", async () => {
      const { events, error } = await stream(toolStart(0, "call_1", "read_file", '{"path":'), toolArgs(0, '"a.ts"'));
      expect(types(events)).to.deep.equal(["start", "toolcall_start", "toolcall_delta", "toolcall_delta"]);
      expect(error?.message).to.include("1 unclosed tool call");
    });

    it("fails EOF after finish_reason when [DONE] never came", async () => {
      const { events, error } = await stream(text("ok"), finish("stop"));
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta", "text_end"]);
      expect(error?.message).to.include("after finish_reason");
    });

    it("fails [DONE] without any finish_reason", async () => {
      const { events, error } = await stream(text("ok"), DONE);
      expect(types(events)).not.to.include("done");
      expect(error?.message).to.include("[DONE] before finishing").and.include("no finish_reason");
    });

    it("stops reading at [DONE] even if the server keeps the connection open", async () => {
      const { events, error } = await run({ body: sseBody(text("ok"), finish("stop"), DONE), then: "hang" });
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
    });
  });

  describe("finish reasons", () => {
    it("reports finish_reason length as done(length) after closing the text and the usage", async () => {
      const { events, error } = await stream(chatChunk({ content: "trunc" }, "length"), usageChunk(10, 4), DONE);
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: "start" },
        { type: "text_start" },
        { type: "text_delta", delta: "trunc" },
        { type: "text_end" },
        { type: "usage", usage: { inputTokens: 10, outputTokens: 4 } },
        { type: "done", reason: "length" },
      ]);
    });

    it("fails finish_reason content_filter", async () => {
      const { events, error } = await stream(text("x"), finish("content_filter"), DONE);
      expect(types(events)).not.to.include("done");
      expect(error?.message).to.include("content_filter");
    });

    it("fails an unknown finish_reason", async () => {
      const { error } = await stream(text("x"), finish("function_call"), DONE);
      expect(error?.message).to.include('"function_call"');
    });

    it("fails tool_calls without any streamed call", async () => {
      const noCalls = await stream(text("x"), finish("tool_calls"), DONE);
      expect(noCalls.error?.message).to.include("no tool call");
    });

    it("fails output that arrives after finish_reason", async () => {
      const { error } = await stream(finish("stop"), text("late"), DONE);
      expect(error?.message).to.include("after finish_reason");
    });

    it("fails an in-band error chunk with the provider's message", async () => {
      const { error } = await stream(text("x"), { error: { message: "upstream overloaded", code: 502 } });
      expect(error?.message).to.include("upstream overloaded");
    });
  });

  describe("tool calls", () => {
    it("fails arguments that are not valid JSON", async () => {
      const { events, error } = await stream(
        toolStart(0, "call_1", "read_file", '{"path": "a.ts"'),
        finish("tool_calls"),
        DONE,
      );
      expect(types(events)).not.to.include("toolcall_end");
      expect(error?.message).to.include("call_1").and.include("not a JSON object");
    });

    it("fails arguments that are JSON but not an object", async () => {
      const { error } = await stream(toolStart(0, "call_1", "ls", "[1]"), finish("tool_calls"), DONE);
      expect(error?.message).to.include("not a JSON object");
    });

    it("ends a call with empty arguments as {} without a delta", async () => {
      const { events, error } = await stream(toolStart(0, "call_1", "ls"), finish("tool_calls"), DONE);
      expect(error).to.equal(undefined);
      expect(events).to.deep.equal([
        { type: "start" },
        { type: "toolcall_start", index: 0, id: "call_1", name: "ls" },
        { type: "toolcall_end", index: 0, id: "call_1", name: "ls", argumentsJson: "{}" },
        { type: "done", reason: "toolUse" },
      ]);
    });

    it("fails a tool call that starts without an id or without a name", async () => {
      const noId = await stream(toolStart(0, undefined, "ls", "{}"), finish("tool_calls"), DONE);
      expect(noId.error?.message).to.include("without an id");
      const noName = await stream(toolStart(0, "call_1", undefined, "{}"), finish("tool_calls"), DONE);
      expect(noName.error?.message).to.include("without a function name");
    });

    it("fails a tool call whose id changes mid-stream", async () => {
      const { error } = await stream(
        toolStart(0, "call_1", "ls", "{"),
        toolStart(0, "call_2", "ls", "}"),
        finish("tool_calls"),
        DONE,
      );
      expect(error?.message).to.include('changed its id from "call_1" to "call_2"');
    });
  });

  describe("usage", () => {
    it("fails a second usage report with different totals", async () => {
      const { events, error } = await stream(text("x"), finish("stop"), usageChunk(10, 2), usageChunk(10, 3), DONE);
      expect(types(events)).not.to.include("usage");
      expect(error?.message).to.include("usage twice");
    });

    it("emits a repeated identical usage report once", async () => {
      const { events, error } = await stream(text("x"), finish("stop"), usageChunk(10, 2), usageChunk(10, 2), DONE);
      expect(error).to.equal(undefined);
      const usages = events.filter((event) => event.type === "usage");
      expect(usages).to.deep.equal([{ type: "usage", usage: { inputTokens: 10, outputTokens: 2 } }]);
    });

    it("ends without a usage event when the provider reported none", async () => {
      const { events, error } = await stream(text("x"), finish("stop"), DONE);
      expect(error).to.equal(undefined);
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta", "text_end", "done"]);
    });
  });

  describe("cancellation", () => {
    it("aborts while waiting for response headers", async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const started = Date.now();
      const { events, error } = await run({ neverRespond: true }, controller.signal);
      expect(events).to.deep.equal([]);
      expect(error?.reason).to.equal("aborted");
      expect(Date.now() - started).to.be.below(2000);
    });

    it("aborts while reading the body", async () => {
      const controller = new AbortController();
      script = { body: sseBody(chatChunk({ reasoning_content: "thinking" })), then: "hang" };
      const events: ModelEvent[] = [];
      let caught: unknown;
      try {
        await adapter.stream(REQUEST, controller.signal, (event) => {
          events.push(event);
          if (event.type === "thinking_delta") setTimeout(() => controller.abort(), 20);
        });
      } catch (error) {
        caught = error;
      }
      expect(types(events)).to.deep.equal(["start", "thinking_start", "thinking_delta"]);
      expect(caught).to.have.property("reason", "aborted");
    });

    it("fails at once with reason aborted when the signal is already aborted", async () => {
      const { error } = await run({ body: sseBody(text("x"), finish("stop"), DONE) }, AbortSignal.abort());
      expect(error?.reason).to.equal("aborted");
    });
  });
});
