// The request body reaches the provider as the UTF-8 of its JSON, its content-length counted in bytes: text outside
// ASCII (accents, symbols, astral-plane characters) included. The adapters hand httpPost the bytes
// (providers/request-body.ts).
import { expect } from "chai";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenAIChatAdapter } from "../../providers/openai-chat.js";
import type { ModelRequest } from "../../providers/types.js";
import { chatChunk, sseBody } from "./model-events.js";

const TEXT = "héllo ✓ 𝄞 — 中文";

describe("provider request body bytes", () => {
  let server: Server;
  let received: { headers: IncomingHttpHeaders; body: Buffer } | undefined;
  let baseUrl: string;

  before(async () => {
    server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (p: Buffer) => parts.push(p));
      req.on("end", () => {
        received = { headers: req.headers, body: Buffer.concat(parts) };
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(sseBody(chatChunk({ content: "ok" }), chatChunk({}, "stop"), "[DONE]"));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("sends non-ASCII text as UTF-8 with its byte length as content-length", async () => {
    const request: ModelRequest = {
      model: "gpt-test",
      system: TEXT,
      tools: [],
      messages: [{ role: "user", content: TEXT }],
    };
    const adapter = createOpenAIChatAdapter({ kind: "openai-chat", baseUrl, apiKey: "k" });
    await adapter.stream(request, new AbortController().signal, () => {});
    const { headers, body } = received!;
    expect(Number(headers["content-length"])).to.equal(body.byteLength);
    const json = JSON.parse(body.toString("utf8")) as { messages: Array<{ content: string }> };
    expect(json.messages.map((m) => m.content)).to.deep.equal([TEXT, TEXT]);
  });
});
