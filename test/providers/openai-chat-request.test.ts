// What goes on the wire to /chat/completions: message projection (docs/protocol/cursor-run.md §8.4, §8.5), headers, and
// byte-stable bodies so consecutive calls share their prefix (docs/protocol/cursor-run.md §8.1).
import { expect } from "chai";
import { createOpenAIChatAdapter, projectChatRequest } from "../../providers/openai-chat.js";
import type { ModelMessage, ModelRequest, ReplayState } from "../../providers/types.js";
import { chatChunk, drain, sseBody } from "./model-events.js";
import { readFixture, startReplayServer, type ReplayServer, type ScriptedResponse } from "./replay-server.js";

const KEY = "sk-request-key";
const STOP = sseBody(chatChunk({ content: "ok" }, "stop"), "[DONE]");

const READ_FILE_PARAMETERS = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };

function conversation(): ModelRequest {
  return {
    model: "deepseek-reasoner",
    system: "You are a coding agent.",
    tools: [{ name: "read_file", description: "Read a file", parameters: READ_FILE_PARAMETERS }],
    messages: [
      { role: "user", content: "Read a.ts and b.ts" },
      {
        role: "assistant",
        text: "Reading both.",
        thinking: "displayable summary",
        replay: { provider: "openai-chat", reasoningContent: "raw thinking" },
        toolCalls: [
          { id: "call_0", name: "read_file", argumentsJson: '{"path":"a.ts"}' },
          { id: "call_1", name: "read_file", argumentsJson: '{"path": "b.ts"}' },
        ],
      },
      { role: "tool", toolCallId: "call_1", content: '{"merge":false,"todos":[]}' },
      { role: "tool", toolCallId: "call_0", content: "export const a = 1;\n" },
    ],
    maxOutputTokens: 4096,
  };
}

const assistant = (text: string, replay?: ReplayState, thinking?: string): ModelMessage => ({
  role: "assistant",
  text,
  toolCalls: [],
  ...(thinking === undefined ? {} : { thinking }),
  ...(replay === undefined ? {} : { replay }),
});

describe("OpenAI Chat request projection", () => {
  let server: ReplayServer;
  let script: ScriptedResponse = { body: STOP };

  before(async () => {
    server = await startReplayServer(() => script);
  });
  after(() => server.close());

  const send = async (request: ModelRequest, baseUrl = server.baseUrl) => {
    script = { body: STOP };
    const outcome = await drain(createOpenAIChatAdapter({ kind: "openai-chat", baseUrl, apiKey: KEY }), request);
    expect(outcome.error).to.equal(undefined);
    return server.requests.at(-1)!;
  };

  it("POSTs the exact body with bearer auth to {baseUrl}/chat/completions", async () => {
    const recorded = await send(conversation(), `${server.baseUrl}/`);
    expect(recorded.method).to.equal("POST");
    expect(recorded.url).to.equal("/v1/chat/completions");
    expect(recorded.headers.authorization).to.equal(`Bearer ${KEY}`);
    expect(recorded.headers["content-type"]).to.equal("application/json");
    expect(recorded.body).to.equal(
      JSON.stringify({
        model: "deepseek-reasoner",
        messages: [
          { role: "system", content: "You are a coding agent." },
          { role: "user", content: "Read a.ts and b.ts" },
          {
            role: "assistant",
            content: "Reading both.",
            reasoning_content: "raw thinking",
            tool_calls: [
              { id: "call_0", type: "function", function: { name: "read_file", arguments: '{"path":"a.ts"}' } },
              { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path": "b.ts"}' } },
            ],
          },
          { role: "tool", tool_call_id: "call_1", content: '{"merge":false,"todos":[]}' },
          { role: "tool", tool_call_id: "call_0", content: "export const a = 1;\n" },
        ],
        tools: [
          {
            type: "function",
            function: { name: "read_file", description: "Read a file", parameters: READ_FILE_PARAMETERS },
          },
        ],
        max_completion_tokens: 4096,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
  });

  it("sends byte-identical bodies for equal requests, and an appended request extends the previous messages", async () => {
    const first = await send(conversation());
    const again = await send(conversation());
    expect(again.body).to.equal(first.body);

    const next = conversation();
    next.messages.push(assistant("Both read."), { role: "user", content: "thanks" });
    const extended = await send(next);
    const messagesOf = (body: string) => JSON.stringify(JSON.parse(body).messages);
    expect(messagesOf(extended.body).startsWith(messagesOf(first.body).slice(0, -1))).to.equal(true);
  });

  it("speaks to an Azure OpenAI deployment with the api-key header and the api-version query", async () => {
    script = { body: STOP };
    const baseUrl = `${server.baseUrl.replace(/\/v1$/, "")}/openai/deployments/gpt-4o-prod`;
    const adapter = createOpenAIChatAdapter({
      kind: "openai-chat",
      baseUrl,
      apiKey: KEY,
      azureApiVersion: "2024-10-21",
    });
    expect((await drain(adapter, conversation())).error).to.equal(undefined);
    const recorded = server.requests.at(-1)!;
    expect(recorded.url).to.equal("/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
    expect(recorded.headers["api-key"]).to.equal(KEY);
    expect(recorded.headers.authorization).to.equal(undefined);
  });

  it("sends reasoning_effort only when the request carries an effort", () => {
    const request: ModelRequest = {
      model: "gpt-5",
      system: "s",
      tools: [],
      messages: [{ role: "user", content: "u" }],
    };
    expect(projectChatRequest({ ...request, reasoningEffort: "high" })).to.have.property("reasoning_effort", "high");
    expect(projectChatRequest(request)).not.to.have.property("reasoning_effort");
  });

  it("omits tools and any token limit when the request has none", () => {
    const body = projectChatRequest({ model: "m", system: "s", tools: [], messages: [{ role: "user", content: "u" }] });
    expect(body).to.deep.equal({
      model: "m",
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: "u" },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it("projects an assistant without text as content null and without calls as no tool_calls key", () => {
    const request: ModelRequest = {
      model: "m",
      system: "s",
      tools: [],
      messages: [
        { role: "assistant", text: "", toolCalls: [{ id: "c", name: "ls", argumentsJson: "{}" }] },
        assistant("plain"),
      ],
    };
    const [, callOnly, plain] = projectChatRequest(request).messages;
    expect(callOnly).to.deep.equal({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c", type: "function", function: { name: "ls", arguments: "{}" } }],
    });
    expect(plain).to.deep.equal({ role: "assistant", content: "plain" });
  });

  it("sends reasoning_content only from this endpoint's non-empty replay state", () => {
    const messages: ModelMessage[] = [
      assistant("a", { provider: "openai-chat", reasoningContent: "kept" }),
      assistant("b", undefined, "displayable thinking is never replayed"),
      assistant("c", {
        provider: "anthropic",
        blocks: [{ type: "thinking", thinking: "other endpoint", signature: "sig" }],
      }),
      assistant("d", { provider: "openai-chat", reasoningContent: "" }),
      assistant("e", { provider: "openai-chat" }),
    ];
    const projected = projectChatRequest({ model: "m", system: "s", tools: [], messages }).messages.slice(1);
    expect(
      projected.map((message) => ("reasoning_content" in message ? message.reasoning_content : undefined)),
    ).to.deep.equal(["kept", undefined, undefined, undefined, undefined]);
  });

  it("round-trips DeepSeek reasoning_content from a recorded stream into the next request unchanged", async () => {
    script = { body: readFixture("openai-compatible/deepseek-reasoner-reasoning-content-then-text.sse") };
    const adapter = createOpenAIChatAdapter({ kind: "openai-chat", baseUrl: server.baseUrl, apiKey: KEY });
    const { events, error } = await drain(adapter, conversation());
    expect(error).to.equal(undefined);
    const streamedThinking = events.flatMap((event) => (event.type === "thinking_delta" ? [event.delta] : [])).join("");
    const done = events.at(-1);
    expect(done?.type).to.equal("done");
    const replay = done?.type === "done" ? done.replay : undefined;
    expect(replay?.provider === "openai-chat" ? replay.reasoningContent : undefined).to.equal(streamedThinking);

    const next = conversation();
    next.messages.push(assistant("Hello there! 😊 How can I help you today?", replay));
    const recorded = await send(next);
    const sent = JSON.parse(recorded.body).messages.at(-1);
    expect(sent.reasoning_content).to.equal(streamedThinking);
    expect(sent.reasoning_content.length).to.be.greaterThan(800);
  });
});
