// createProviderAdapter picks the adapter by endpoint kind.
import { expect } from "chai";
import { createProviderAdapter } from "../../providers/index.js";
import { chatChunk, drain, sseBody } from "./model-events.js";
import { readFixture, startReplayServer } from "./replay-server.js";

describe("createProviderAdapter", () => {
  it("streams an openai-chat endpoint through the Chat Completions adapter", async () => {
    const server = await startReplayServer(() => ({ body: sseBody(chatChunk({ content: "hi" }, "stop"), "[DONE]") }));
    try {
      const adapter = createProviderAdapter({ kind: "openai-chat", baseUrl: server.baseUrl, apiKey: "k" });
      const { events, error } = await drain(adapter, { model: "m", system: "s", tools: [], messages: [] });
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
      expect(server.requests.map((request) => request.url)).to.deep.equal(["/v1/chat/completions"]);
    } finally {
      await server.close();
    }
  });

  it("streams an openai-responses endpoint through the Responses adapter", async () => {
    const completed = { type: "response.completed", response: { status: "completed", output: [] } };
    const server = await startReplayServer(() => ({ body: sseBody(completed) }));
    try {
      const adapter = createProviderAdapter({ kind: "openai-responses", baseUrl: server.baseUrl, apiKey: "k" });
      const { events, error } = await drain(adapter, { model: "m", system: "s", tools: [], messages: [] });
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
      expect(server.requests.map((request) => request.url)).to.deep.equal(["/v1/responses"]);
    } finally {
      await server.close();
    }
  });

  it("streams an anthropic endpoint through the Messages adapter", async () => {
    const server = await startReplayServer(() => ({ body: readFixture("anthropic/text.sse") }));
    try {
      const adapter = createProviderAdapter({
        kind: "anthropic",
        baseUrl: server.baseUrl.replace(/\/v1$/, ""),
        apiKey: "k",
      });
      const { events, error } = await drain(adapter, { model: "m", system: "s", tools: [], messages: [] });
      expect(error).to.equal(undefined);
      expect(events.at(-1)).to.deep.equal({ type: "done", reason: "stop" });
      expect(server.requests.map((request) => request.url)).to.deep.equal(["/v1/messages"]);
    } finally {
      await server.close();
    }
  });
});
