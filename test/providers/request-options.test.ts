// The request options the Anthropic Messages front door carries into every adapter: user and tool-result images
// (inline and by URL), tool_choice and stop sequences, each in its endpoint's own shape; and a stop sequence named by the endpoint
// coming back on `done`. A request without them serialises exactly as before (Cursor's prompts keep their bytes).
import { expect } from "chai";
import { createAnthropicAdapter, projectAnthropicRequest } from "../../providers/anthropic.js";
import { projectChatRequest } from "../../providers/openai-chat.js";
import { projectResponsesRequest } from "../../providers/openai-responses.js";
import { ProviderError, type ModelRequest, type ToolChoice } from "../../providers/types.js";
import { drain } from "./model-events.js";
import { startReplayServer } from "./replay-server.js";

const PNG = "iVBORw0KGgo=";
const TOOLS = [{ name: "Bash", description: "Run", parameters: { type: "object" } }];

const request = (extra: Partial<ModelRequest> = {}): ModelRequest => ({
  model: "m",
  system: "sys",
  tools: TOOLS,
  messages: [
    {
      role: "user",
      content: "what is this?",
      images: [
        { type: "base64", mediaType: "image/png", data: PNG },
        { type: "url", url: "https://example.com/a.jpg" },
      ],
    },
  ],
  ...extra,
});

describe("provider request options: images, tool_choice, stop sequences", () => {
  it("OpenAI Chat: image_url parts (data URL and URL) ahead of the text, tool_choice, stop", () => {
    const body = projectChatRequest(request({ toolChoice: { name: "Bash" }, stopSequences: ["END"] }));
    expect(body.messages[1]).to.deep.equal({
      role: "user",
      content: [
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "image_url", image_url: { url: "https://example.com/a.jpg" } },
        { type: "text", text: "what is this?" },
      ],
    });
    expect(body.tool_choice).to.deep.equal({ type: "function", function: { name: "Bash" } });
    expect(body.stop).to.deep.equal(["END"]);
    const choices: ToolChoice[] = ["auto", "none", "required"];
    expect(choices.map((toolChoice) => projectChatRequest(request({ toolChoice })).tool_choice)).to.deep.equal(choices);
  });

  it("OpenAI Responses: input_image items ahead of input_text, tool_choice; stop sequences refused", () => {
    const body = projectResponsesRequest(request({ toolChoice: { name: "Bash" } }));
    expect(body.input[0]).to.deep.equal({
      role: "user",
      content: [
        { type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" },
        { type: "input_image", image_url: "https://example.com/a.jpg", detail: "auto" },
        { type: "input_text", text: "what is this?" },
      ],
    });
    expect(body.tool_choice).to.deep.equal({ type: "function", name: "Bash" });
    expect(projectResponsesRequest(request({ toolChoice: "required" })).tool_choice).to.equal("required");
    expect(() => projectResponsesRequest(request({ stopSequences: ["END"] })))
      .to.throw(ProviderError, /stop sequences are not supported/)
      .with.property("status", 400);
  });

  it("Anthropic: image blocks (base64 and url sources) ahead of the text, tool_choice, stop_sequences", () => {
    const body = projectAnthropicRequest(request({ toolChoice: { name: "Bash" }, stopSequences: ["END"] }));
    expect(body.messages[0]).to.deep.equal({
      role: "user",
      content: [
        { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        { type: "image", source: { type: "url", url: "https://example.com/a.jpg" } },
        { type: "text", text: "what is this?", cache_control: { type: "ephemeral" } },
      ],
    });
    expect(body.tool_choice).to.deep.equal({ type: "tool", name: "Bash" });
    expect(body.stop_sequences).to.deep.equal(["END"]);
    const mapped = (["auto", "none", "required"] as const).map(
      (toolChoice) => projectAnthropicRequest(request({ toolChoice })).tool_choice,
    );
    expect(mapped).to.deep.equal([{ type: "auto" }, { type: "none" }, { type: "any" }]);
  });

  it("Anthropic: a forced tool call goes without thinking, which the API refuses alongside it", () => {
    const forced = projectAnthropicRequest(request({ toolChoice: "required", reasoningEffort: "high" }));
    expect(forced).not.to.have.property("thinking");
    const free = projectAnthropicRequest(request({ toolChoice: "auto", reasoningEffort: "high" }));
    expect(free.thinking).to.deep.equal({ type: "enabled", budget_tokens: 16384 });
  });

  it("carries a tool result's images: Chat after the round, Responses and Anthropic inside the result", () => {
    const image = { type: "base64" as const, mediaType: "image/png", data: PNG };
    const round = request({
      messages: [
        { role: "user", content: "look at both" },
        {
          role: "assistant",
          text: "",
          toolCalls: [
            { id: "c1", name: "Read", argumentsJson: '{"path":"a.png"}' },
            { id: "c2", name: "Read", argumentsJson: '{"path":"b.txt"}' },
          ],
        },
        { role: "tool", toolCallId: "c1", content: "", images: [image] },
        { role: "tool", toolCallId: "c2", content: "text" },
        { role: "user", content: "and?" },
      ],
    });
    expect(projectChatRequest(round).messages.slice(3)).to.deep.equal([
      { role: "tool", tool_call_id: "c1", content: "" },
      { role: "tool", tool_call_id: "c2", content: "text" },
      { role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }] },
      { role: "user", content: "and?" },
    ]);
    expect(projectResponsesRequest(round).input.slice(3, 5)).to.deep.equal([
      {
        type: "function_call_output",
        call_id: "c1",
        output: [{ type: "input_image", image_url: `data:image/png;base64,${PNG}`, detail: "auto" }],
      },
      { type: "function_call_output", call_id: "c2", output: "text" },
    ]);
    expect(projectAnthropicRequest(round).messages[2]).to.deep.equal({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "c1",
          content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }],
        },
        { type: "tool_result", tool_use_id: "c2", content: "text" },
      ],
    });
  });

  it("carries the conversation's prompt_cache_key to Chat and Responses; Anthropic caches by breakpoints instead", () => {
    const keyed: ModelRequest = {
      model: "m",
      system: "s",
      tools: [],
      messages: [{ role: "user", content: "hi" }],
      promptCacheKey: "byok-k",
    };
    expect(projectChatRequest(keyed).prompt_cache_key).to.equal("byok-k");
    expect(projectResponsesRequest(keyed).prompt_cache_key).to.equal("byok-k");
    expect(JSON.stringify(projectAnthropicRequest(keyed))).not.to.include("byok-k");
  });

  it("sends no tool_choice without tools and keeps a request without options byte for byte", () => {
    const bare: ModelRequest = { model: "m", system: "s", tools: [], messages: [{ role: "user", content: "hi" }] };
    const choosing = { ...bare, toolChoice: "required" as const };
    expect(projectChatRequest(choosing)).to.deep.equal(projectChatRequest(bare));
    expect(projectResponsesRequest(choosing)).to.deep.equal(projectResponsesRequest(bare));
    expect(projectAnthropicRequest(choosing)).to.deep.equal(projectAnthropicRequest(bare));
    expect(projectChatRequest(bare).messages[1]).to.deep.equal({ role: "user", content: "hi" });
    expect(projectResponsesRequest(bare).input[0]).to.deep.equal({ role: "user", content: "hi" });
    // The one message is also this call's cache breakpoint (anthropic-request.test.ts).
    expect(projectAnthropicRequest(bare).messages[0]).to.deep.equal({
      role: "user",
      content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }],
    });
  });

  it("Anthropic: stop_reason stop_sequence ends in done(stop) naming the sequence", async () => {
    const record = (payload: { type: string }) => `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;
    const body = [
      { type: "message_start", message: { usage: { input_tokens: 3, output_tokens: 1 } } },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "a b " } },
      { type: "content_block_stop", index: 0 },
      {
        type: "message_delta",
        delta: { stop_reason: "stop_sequence", stop_sequence: "END" },
        usage: { output_tokens: 2 },
      },
      { type: "message_stop" },
    ]
      .map(record)
      .join("");
    const server = await startReplayServer(() => ({ body }));
    try {
      const adapter = createAnthropicAdapter({
        kind: "anthropic",
        baseUrl: server.baseUrl.replace(/\/v1$/, ""),
        apiKey: "k",
      });
      const { events, error } = await drain(adapter, request({ stopSequences: ["END"] }));
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop", stopSequence: "END" });
      expect(JSON.parse(server.requests[0]!.body).stop_sequences).to.deep.equal(["END"]);
    } finally {
      await server.close();
    }
  });
});
