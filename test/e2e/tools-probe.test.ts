import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { AgentServerMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { CursorClient } from "../support/cursor-client.js";
import { createWorkspace } from "../support/client-workspace.js";
import { startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";

describe("probe", () => {
  after(killAllGateways);
  it("read", async () => {
    const fake = await startFakeOpenAI();
    const dataDir = await mkdtemp(join(tmpdir(), "byok-probe-"));
    const gw = await startGatewayProcess({ dataDir, config: { models: [{ id: "m1", provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: "sk-test", model: "gpt-test" }] } });
    fake.enqueue(
      { text: "Let me read.", toolCalls: [{ id: "call_1", name: "Write", args: { path: "a.txt", contents: "x\r\ny\n" } }], usage: { prompt_tokens: 100, completion_tokens: 20 } , chunkSize: 3},
      { text: "Done.", usage: { prompt_tokens: 150, completion_tokens: 7 } },
    );
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.txt": "hello\nworld\n" }) });
    const run = client.startRun({ conversationId: "c-probe", modelId: "m1", text: "read a.txt" });
    const end = await run.done;
    console.log(end, run.kinds());
    for (const f of run.frames) if (f.kind === "message" && f.message.message.case !== "kvServerMessage") console.log(JSON.stringify(toJson(AgentServerMessageSchema, f.message)).slice(0, 600));
    console.log(JSON.stringify(fake.requests.map((r) => r.body.messages), null, 1).slice(0, 6000));
    console.log(client.violations());
    await fake.close();
  });
});
