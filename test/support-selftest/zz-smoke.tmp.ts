import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGatewayProcess, killAllGateways } from "../support/gateway-process.js";
import { startFakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream } from "../support/fake-upstream.js";
import { CursorClient } from "../support/cursor-client.js";
import { createWorkspace } from "../support/client-workspace.js";
import { frameKinds } from "../support/observed-frames.js";

const openai = await startFakeOpenAI();
const upstream = await startFakeUpstream();
const dataDir = await mkdtemp(join(tmpdir(), "smoke-"));
try {
  const gw = await startGatewayProcess({
    dataDir, upstream: upstream.url,
    config: { models: [{ id: "byok-m", provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-secret", model: "gpt-x" }] },
  });
  console.log("gateway at", gw.url);
  openai.enqueue({ toolCalls: [{ id: "call_1", name: "Read", args: { path: "/workspace/a.ts" } }] }, { text: "done reading", usage: { prompt_tokens: 3, completion_tokens: 2 } });
  const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.ts": "const a = 1;" }) });
  const run = client.startRun({ conversationId: "c1", modelId: "byok-m", text: "read a.ts" });
  const end = await Promise.race([run.done, new Promise((r) => setTimeout(() => r("TIMEOUT"), 15000))]);
  console.log("end", JSON.stringify(end, (_, v) => typeof v === "bigint" ? String(v) : v));
  console.log(frameKinds(run.frames));
  console.log("violations", client.violations());
  console.log("appends", run.appends.map(a => [String(a.seqno), a.message.message.case, (a.message.message.value as any)?.message?.case, a.response?.status, a.response?.error]));
  console.log("execLog", JSON.stringify(run.execLog));
  console.log("kvLog", run.kvLog.map(k => k.id), "frames", run.frames.length, run.frames.map(f => f.kind + ":" + f.connection));
  console.log("openai requests", openai.requests.length, openai.requests.map(r => r.headers.authorization));
  console.log(gw.stderrLines().slice(-10).join("\n"));
  console.log("stop", await gw.stop());
} finally {
  await killAllGateways(); await openai.close(); await upstream.close();
}
