// The strict contract of docs/protocol/cursor-run.md §7.3 for the Responses API: HTTP failures, `error` events,
// response.failed, response.incomplete, bare EOF, unfinished items, bad tool arguments and cancellation all end in
// ProviderError, never in a `done`; and the edges of a well-formed stream (whole arguments in the finished item,
// several items).
import { expect } from "chai";
import { createOpenAIResponsesAdapter } from "../../providers/openai-responses.js";
import type { ModelEvent, ModelRequest, ProviderAdapter } from "../../providers/types.js";
import { drain } from "./model-events.js";
import { startReplayServer, type ReplayServer, type ScriptedResponse } from "./replay-server.js";

const KEY = "sk-test-SECRET-77e1";
const REQUEST: ModelRequest = {
  model: "gpt-test",
  system: "sys",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};

/** One SSE record the way the Responses API frames it: `event: <type>` then the JSON payload. */
const record = (type: string, fields: object = {}) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
const created = record("response.created", { response: { id: "resp_1", status: "in_progress", output: [] } });
const usage = {
  input_tokens: 11,
  output_tokens: 7,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens_details: { reasoning_tokens: 3 },
};
const terminal = (type: string, response: object) => record(type, { response: { id: "resp_1", usage, ...response } });
const completed = terminal("response.completed", { status: "completed" });

const added = (output_index: number, item: object) => record("response.output_item.added", { output_index, item });
const finished = (output_index: number, item: object) => record("response.output_item.done", { output_index, item });
const textDelta = (output_index: number, delta: string) =>
  record("response.output_text.delta", { output_index, item_id: "msg_1", content_index: 0, delta });
const argsDelta = (output_index: number, delta: string) =>
  record("response.function_call_arguments.delta", { output_index, item_id: "fc_1", delta });

const message = (text: string, extra: object = {}) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text, annotations: [] }],
  ...extra,
});
const functionCall = (args: string, extra: object = {}) => ({
  id: "fc_1",
  type: "function_call",
  call_id: "call_1",
  name: "Read",
  arguments: args,
  status: "completed",
  ...extra,
});

describe("OpenAI Responses adapter failures and edge cases", () => {
  let server: ReplayServer;
  let script: ScriptedResponse = {};
  let adapter: ProviderAdapter;

  before(async () => {
    server = await startReplayServer(() => script);
    adapter = createOpenAIResponsesAdapter({ kind: "openai-responses", baseUrl: server.baseUrl, apiKey: KEY });
  });
  after(() => server.close());

  const run = async (response: ScriptedResponse, signal?: AbortSignal) => {
    script = response;
    return drain(adapter, REQUEST, signal);
  };
  const stream = (...records: string[]) => run({ body: records.join("") });
  const types = (events: ModelEvent[]) => events.map((event) => event.type);

  describe("HTTP", () => {
    it("fails a 500 with the status and the provider's message", async () => {
      const body = JSON.stringify({ error: { message: "The server had an error.", type: "server_error" } });
      const { events, error } = await run({ status: 500, contentType: "application/json", body });
      expect(events).to.deep.equal([]);
      expect(error?.status).to.equal(500);
      expect(error?.message).to.include("500").and.include("The server had an error.").and.include("/v1/responses");
    });

    it("fails a 401 without repeating the key, even when the provider echoes it", async () => {
      const body = JSON.stringify({
        error: { message: `Incorrect API key provided: ${KEY}.`, code: "invalid_api_key" },
      });
      const { error } = await run({ status: 401, contentType: "application/json", body });
      expect(error?.status).to.equal(401);
      expect(error?.message).to.include("Incorrect API key provided").and.not.include(KEY);
    });

    it("fails a 200 that answers JSON instead of an event stream", async () => {
      const { error } = await run({
        contentType: "application/json",
        body: JSON.stringify({ error: { message: "nope" } }),
      });
      expect(error?.message).to.include("expected text/event-stream").and.include("nope");
    });
  });

  describe("in-band failures", () => {
    it("fails at an `error` event carrying its code at the top level (older streams)", async () => {
      const { events, error } = await stream(
        record("error", { code: "server_error", message: "Something broke", param: null }),
      );
      expect(events).to.deep.equal([]);
      expect(error?.message).to.equal("responses stream reported an error: Something broke (server_error)");
    });

    it("fails a response.failed with its error, after reporting the usage it spent", async () => {
      const failed = terminal("response.failed", {
        status: "failed",
        error: { code: "server_error", message: "The model failed." },
      });
      const { events, error } = await stream(created, added(0, message("")), textDelta(0, "Par"), failed);
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta", "usage"]);
      expect(events.at(-1)).to.deep.equal({
        type: "usage",
        usage: { inputTokens: 11, outputTokens: 7, cacheReadTokens: 0, reasoningTokens: 3 },
      });
      expect(error?.message).to.equal("response failed: The model failed. (server_error)");
    });

    it("fails a response.incomplete (output limit) instead of finishing", async () => {
      const incomplete = terminal("response.incomplete", {
        status: "incomplete",
        incomplete_details: { reason: "max_output_tokens" },
      });
      const { events, error } = await stream(created, added(0, message("")), textDelta(0, "Par"), incomplete);
      expect(types(events)).to.not.include("done");
      expect(error?.message).to.equal("response incomplete (max_output_tokens)");
    });

    it("fails a response.completed whose status is not completed", async () => {
      const { events, error } = await stream(created, terminal("response.completed", { status: "incomplete" }));
      expect(types(events)).to.deep.equal(["start"]);
      expect(error?.message).to.equal('response.completed carries status "incomplete"');
    });
  });

  describe("end of stream", () => {
    it("fails a bare EOF after response.created", async () => {
      const { events, error } = await stream(created);
      expect(types(events)).to.deep.equal(["start"]);
      expect(error?.message).to.equal("responses stream ended without response.completed");
    });

    it("fails an EOF in the middle of a function call and names the unfinished item", async () => {
      const { events, error } = await stream(created, added(0, functionCall("")), argsDelta(0, '{"pa'));
      expect(types(events)).to.deep.equal(["start", "toolcall_start", "toolcall_delta"]);
      expect(error?.message).to.equal(
        "responses stream ended without response.completed with 1 unfinished output item(s)",
      );
    });

    it("fails a socket cut before response.completed", async () => {
      const { error } = await run({ body: created + added(0, message("")) + textDelta(0, "Par"), then: "destroy" });
      expect(error?.reason).to.equal("error");
    });

    it("treats a Chat-style [DONE] as no terminal event, and ignores one after response.completed", async () => {
      const early = await stream(created, "data: [DONE]\n\n");
      expect(early.error?.message).to.equal("responses stream ended without response.completed");
      const late = await stream(created, completed, "data: [DONE]\n\n");
      expect(late.error).to.equal(undefined);
      expect(types(late.events)).to.deep.equal(["start", "usage", "done"]);
    });

    it("fails response.completed while an output item is still open", async () => {
      const { error } = await stream(created, added(0, message("")), textDelta(0, "Par"), completed);
      expect(error?.message).to.equal("response.completed with 1 unfinished output item(s)");
    });

    it("ends a completed response without output as a stop with no replay state", async () => {
      const { events, error } = await stream(created, completed);
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
    });
  });

  describe("malformed streams", () => {
    it("fails an output item type this gateway cannot carry out", async () => {
      const { error } = await stream(created, added(0, { id: "ws_1", type: "web_search_call", status: "in_progress" }));
      expect(error?.message).to.equal('responses stream sent an unsupported output item type "web_search_call"');
    });

    it("fails a delta for an output item that was never added, or of another kind", async () => {
      const orphan = await stream(created, textDelta(3, "x"));
      expect(orphan.error?.message).to.equal("responses stream sent a text delta for output 3, which is not open");
      const wrongKind = await stream(created, added(0, functionCall("")), textDelta(0, "x"));
      expect(wrongKind.error?.message).to.equal(
        "responses stream sent a text delta for output 0, a function_call item",
      );
    });

    it("fails a function call without a call_id", async () => {
      const { error } = await stream(created, added(0, functionCall("", { call_id: undefined })));
      expect(error?.message).to.equal("function call at output 0 has no call_id");
    });

    it("fails a finished call whose arguments contradict its deltas, or are not a JSON object", async () => {
      const contradicting = await stream(
        created,
        added(0, functionCall("")),
        argsDelta(0, '{"path":"a"}'),
        finished(0, functionCall('{"path":"b"}')),
        completed,
      );
      expect(contradicting.error?.message).to.equal(
        "function call call_1 (Read) finished with content that differs from its streamed deltas",
      );
      const notObject = await stream(
        created,
        added(0, functionCall("")),
        argsDelta(0, "[1]"),
        finished(0, functionCall("[1]")),
        completed,
      );
      expect(notObject.error?.message).to.equal("function call call_1 (Read) arguments are not a JSON object: [1]");
    });

    it("fails a finished message whose text contradicts its deltas", async () => {
      const { error } = await stream(
        created,
        added(0, message("")),
        textDelta(0, "Paris"),
        finished(0, message("Rome")),
        completed,
      );
      expect(error?.message).to.equal(
        "message at output 0 finished with content that differs from its streamed deltas",
      );
    });

    it("fails a non-JSON data record", async () => {
      const { error } = await stream(created, "data: {oops\n\n");
      expect(error?.message).to.equal("responses stream sent a non-JSON event: {oops");
    });
  });

  describe("well-formed edges", () => {
    it("streams arguments sent whole in output_item.done, and ends empty arguments as {}", async () => {
      const second = { ...functionCall(""), id: "fc_2", call_id: "call_2", name: "Ls" };
      const { events, error } = await stream(
        created,
        added(0, functionCall("")),
        finished(0, functionCall('{"path":"a.ts"}')),
        added(1, { ...second, status: "in_progress" }),
        finished(1, second),
        completed,
      );
      expect(error).to.equal(undefined);
      expect(events.slice(1, 7)).to.deep.equal([
        { type: "toolcall_start", index: 0, id: "call_1", name: "Read" },
        { type: "toolcall_delta", index: 0, delta: '{"path":"a.ts"}' },
        { type: "toolcall_end", index: 0, id: "call_1", name: "Read", argumentsJson: '{"path":"a.ts"}' },
        { type: "toolcall_start", index: 1, id: "call_2", name: "Ls" },
        { type: "toolcall_end", index: 1, id: "call_2", name: "Ls", argumentsJson: "{}" },
        { type: "usage", usage: { inputTokens: 11, outputTokens: 7, cacheReadTokens: 0, reasoningTokens: 3 } },
      ]);
      expect(events.at(-1)).to.include({ type: "done", reason: "toolUse" });
    });

    it("shows message text that only the finished item carries (a server that streams no deltas)", async () => {
      const refusal = { ...message(""), content: [{ type: "refusal", refusal: "I can't help with that." }] };
      const { events, error } = await stream(
        created,
        added(0, message("")),
        textDelta(0, "Par"),
        finished(0, message("Paris.")),
        added(1, message("")),
        finished(1, refusal),
        completed,
      );
      expect(error).to.equal(undefined);
      expect(events.slice(0, 8)).to.deep.equal([
        { type: "start" },
        { type: "text_start" },
        { type: "text_delta", delta: "Par" },
        { type: "text_delta", delta: "is." },
        { type: "text_end" },
        { type: "text_start" },
        { type: "text_delta", delta: "I can't help with that." },
        { type: "text_end" },
      ]);
    });

    it("keeps every finished item verbatim, in output order, including a message's phase", async () => {
      const reasoning = { id: "rs_1", type: "reasoning", summary: [], encrypted_content: "final-capsule" };
      const commentary = message("Checking.", { phase: "commentary" });
      const { events, error } = await stream(
        created,
        added(0, { ...reasoning, encrypted_content: "early-capsule" }),
        finished(0, reasoning),
        added(1, { ...commentary, status: "in_progress", content: [] }),
        textDelta(1, "Checking."),
        record("response.output_text.annotation.added", { output_index: 1, annotation: {} }),
        finished(1, commentary),
        added(2, functionCall("")),
        argsDelta(2, "{}"),
        finished(2, functionCall("{}")),
        completed,
      );
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({
        type: "done",
        reason: "toolUse",
        replay: { provider: "openai-responses", items: [reasoning, commentary, functionCall("{}")] },
      });
    });
  });

  describe("cancellation", () => {
    it("aborts while waiting for headers", async () => {
      const controller = new AbortController();
      // The abort comes once the provider has the request and is withholding its headers.
      const silent = await startReplayServer(() => {
        controller.abort();
        return { neverRespond: true };
      });
      try {
        const silentAdapter = createOpenAIResponsesAdapter({
          kind: "openai-responses",
          baseUrl: silent.baseUrl,
          apiKey: KEY,
        });
        const { events, error } = await drain(silentAdapter, REQUEST, controller.signal);
        expect(events).to.deep.equal([]);
        expect(error?.reason).to.equal("aborted");
      } finally {
        await silent.close();
      }
    });

    it("aborts while reading the body", async () => {
      const controller = new AbortController();
      script = { body: created + added(0, message("")) + textDelta(0, "Par"), then: "hang" };
      const events: ModelEvent[] = [];
      let failure: unknown;
      try {
        await adapter.stream(REQUEST, controller.signal, (event) => {
          events.push(event);
          if (event.type === "text_delta") controller.abort();
        });
      } catch (error) {
        failure = error;
      }
      expect(types(events)).to.deep.equal(["start", "text_start", "text_delta"]);
      expect(failure).to.have.property("reason", "aborted");
    });
  });
});
