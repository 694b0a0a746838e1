// The generic `acp` worker kind end to end: the real gateway process configured with `workers.acp.command` (the
// scripted ACP agent of test/support, a real ACP peer in its own process), `init {worker: "acp"}`, and an AEP client
// over a real WebSocket that sees the ACP extension events on the wire.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import { type AepClient, openSession } from "../aep/aep-client.js";
import { OrderingChecker } from "../aep/invariants.js";
import { type GatewayProcess, startGatewayProcess } from "../support/gateway-process.js";

/** A configured worker env value: a secret no AEP client may see. */
const AGENT_SECRET = "sk-acp-e2e-agent-secret";
const agentScript = fileURLToPath(new URL("../support/scripted-acp-agent.ts", import.meta.url));
/** tsx by URL: the agent runs in the workdir, where a bare `--import tsx` would not resolve. */
const tsx = import.meta.resolve("tsx");

/** The AEP token (a token is always required; client-chosen workdirs must lie inside aep.workdir). */
const TOKEN = "acp-e2e-token-0123456789";

describe("AEP v1 end to end with a generic ACP agent (workers.acp)", function () {
  this.timeout(60_000);
  let root: string;
  let gateway: GatewayProcess;
  let url: string;
  const clients: AepClient[] = [];

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "byok-acp-e2e-"));
    gateway = await startGatewayProcess({
      dataDir: join(root, "data"),
      readyTimeoutMs: 60_000, // a loaded machine (CI, parallel suites) starts tsx slowly
      config: {
        aep: { port: 0, token: TOKEN, workdir: root },
        workers: {
          acp: {
            command: process.execPath,
            args: ["--import", tsx, agentScript],
            env: { SCRIPTED_SECRET: AGENT_SECRET },
            mode: "ask",
          },
        },
      },
    });
    const line = gateway.stdoutLines().find((l) => l.startsWith("byok-gateway AEP v1 listening on "))!;
    url = line.slice("byok-gateway AEP v1 listening on ".length).trim();
  });
  after(async () => {
    for (const c of clients) await c.close();
    await gateway?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it("init {worker: acp} runs the configured agent: mode_update, plan, tool_call, tool_update, diff on the wire", async () => {
    const checker = new OrderingChecker();
    const workdir = await mkdtemp(join(root, "work-"));
    const { client } = await openSession(url, { worker: "acp", workdir, token: TOKEN }, checker);
    clients.push(client);
    const from = client.mark();
    client.send("input", { content: "tools" });
    const ask = await client.next("permission_request", from);
    expect(ask.event.data).to.deep.include({ tool_name: "edit", description: "Edit a.txt" });
    client.send("permission_response", { id: (ask.event.data as { id: string }).id, allowed: true });
    const settled = (e: ServerEnvelope) =>
      e.event.type.startsWith("runtime.execution.") && e.event.type !== "runtime.execution.started";
    await client.next(settled, from);

    const diff = { path: "/project/a.txt", old_text: "old\n", new_text: "new\n" };
    expect(client.of("mode_update", from)).to.deep.equal([{ mode: "code" }]);
    expect(client.of("plan", from)).to.deep.equal([
      { items: [{ content: "Edit a.txt", priority: "high", status: "in_progress" }] },
    ]);
    expect(client.of("tool_call", from)).to.deep.equal([
      {
        id: "t1",
        name: "edit",
        input: { path: "/project/a.txt" },
        title: "Edit a.txt",
        kind: "edit",
        locations: [{ path: "/project/a.txt", line: 3 }],
      },
    ]);
    expect(client.of("tool_update", from)[0]).to.deep.include({ id: "t1", status: "in_progress", diff });
    expect(client.of("tool_result", from)).to.deep.equal([{ id: "t1", output: "", status: "completed", diff }]);
    expect(client.of("message", from).map((m) => m.content)).to.deep.equal(["chose yes"]);
    expect(client.of("done", from)[0]).to.deep.include({ success: true });
    expect(checker.violations).to.deep.equal([]);
  });

  it("a worker env value the agent prints reaches the client redacted", async () => {
    const workdir = await mkdtemp(join(root, "work-"));
    const { client } = await openSession(url, { worker: "acp", workdir, token: TOKEN });
    clients.push(client);
    const frames: string[] = [];
    client.ws.on("message", (data) => frames.push(data.toString()));
    const from = client.mark();
    client.send("input", { content: "env SCRIPTED_SECRET" });
    await client.next("done", from);
    expect(client.of("message", from).map((m) => m.content)).to.deep.equal(["SCRIPTED_SECRET=[redacted]"]);
    expect(frames.filter((f) => f.includes(AGENT_SECRET))).to.deep.equal([]);
  });
});
