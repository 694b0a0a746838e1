// A model call that is stopped once its terminal event arrived (the ModelCall stops its provider actor on `done`)
// leaves its keep-alive connection to the next call, as a call read to its end does.
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenAIChatAdapter } from "../../providers/openai-chat.js";
import type { ModelRequest, ProviderAdapter } from "../../providers/types.js";
import { chatChunk, sseBody } from "./model-events.js";

const REQUEST: ModelRequest = {
  model: "gpt-test",
  system: "sys",
  tools: [],
  messages: [{ role: "user", content: "hi" }],
};

describe("provider connections across calls", () => {
  let server: Server;
  let connections = 0;
  let adapter: ProviderAdapter;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(sseBody(chatChunk({ content: "ok" }), chatChunk({}, "stop"), "[DONE]"));
      });
    });
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    adapter = createOpenAIChatAdapter({ kind: "openai-chat", baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: "k" });
  });
  after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );

  /** One call as the run's provider actor reads it: the signal aborts at `done`, the reading goes on to the end. */
  async function callStoppedAtDone(): Promise<string[]> {
    const controller = new AbortController();
    const types: string[] = [];
    await adapter.stream(REQUEST, controller.signal, (event) => {
      types.push(event.type);
      if (event.type === "done") controller.abort();
    });
    await new Promise((resolve) => setImmediate(resolve));
    return types;
  }

  it("reuses the connection of a call stopped at its done event", async () => {
    connections = 0;
    for (let call = 0; call < 3; call++) expect((await callStoppedAtDone()).at(-1)).to.equal("done");
    expect(connections).to.equal(1);
  });
});
