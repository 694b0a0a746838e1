// Failure causes of a run (machines/run-ends.ts) that the other ending tests do not show on the wire
// (docs/protocol/cursor-run.md §3.5, §7.3, §10.2–§10.6): a provider failure during a later model call, after a tool
// round settled, and a get_blob_args the client never answers. Each is checked as the client sees it (EndStream code
// and ErrorDetails, no turn_ended, what was published before) and as the gateway logs it (the run's cause).
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { ErrorDetails_Error } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient, type RunHandle } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import { waitUntil } from "../support/util.js";

const MODEL = "byok-e2e-causes";

/** The gateway's "run failed" log record for a run. */
async function failureLog(gw: GatewayProcess, run: RunHandle): Promise<Record<string, unknown>> {
  const find = () =>
    gw
      .stderrLines()
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.msg === "run failed" && r.request_id === run.requestId);
  await waitUntil(
    () => find() !== undefined,
    3_000,
    () => `no "run failed" log line for ${run.requestId}`,
  );
  return find()!;
}

describe("e2e: failure causes on the wire", function () {
  this.timeout(20_000);
  let dataDir: string;
  let openai: FakeOpenAI;
  let gw: GatewayProcess;

  before(async function () {
    this.timeout(30_000);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-causes-"));
    openai = await startFakeOpenAI();
    gw = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          { id: MODEL, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-e2e-causes", model: "gpt-e2e" },
        ],
        timers: { kvReplyDeadlineMs: 300 },
      },
    });
  });
  after(async () => {
    await killAllGateways();
    await openai?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("provider failure during a later call: the settled round stays published, the run ends unavailable", async () => {
    openai.enqueue(
      { toolCalls: [{ id: "call_r", name: "Read", args: { path: "a.txt" } }] },
      {
        status: 500,
        body: JSON.stringify({ error: { message: "upstream exploded", type: "server_error" } }),
      },
    );
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.txt": "alpha\n" }) });
    const run = client.startRun({ conversationId: `causes-later-${randomUUID()}`, modelId: MODEL, text: "read a" });
    const end = await run.done;

    if (end.ok) throw new Error("expected the run to fail");
    expect(end.code).to.equal("unavailable");
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    const kinds = run.kinds();
    expect(kinds.filter((k) => k === "tool_call_completed")).to.have.length(1);
    // The staged and the settled checkpoint of the round; nothing after the failed second call.
    expect(kinds.filter((k) => k === "checkpoint")).to.have.length(2);
    expect(kinds.slice(kinds.lastIndexOf("checkpoint") + 1)).to.deep.equal(["end:unavailable"]);
    expect(kinds).not.to.include("turn_ended");
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
    expect(await failureLog(gw, run)).to.include({ cause: "provider", code: "unavailable" });
  });

  it("a get_blob_args never answered ends the run invalid_argument at the KV deadline, with no provider call", async () => {
    const missing = createHash("sha256").update(`a root this gateway never stored ${randomUUID()}`).digest();
    const checkpoint = create(ConversationStateStructureSchema, { rootPromptMessagesJson: [missing] });
    const client = new CursorClient(gw.url, {
      hooks: { onKv: (kv) => (kv.message.case === "getBlobArgs" ? { silent: true } : undefined) },
    });
    const requestsBefore = openai.requests.length;
    const run = client.startRun({
      conversationId: `causes-get-deadline-${randomUUID()}`,
      modelId: MODEL,
      text: "continue",
      checkpoint,
    });
    const end = await run.done;

    if (end.ok) throw new Error("expected the run to fail");
    expect({ code: end.code, message: end.message }).to.deep.equal({
      code: "invalid_argument",
      message: "protocol error: get_blob_args not answered in time",
    });
    expect(end.errorDetails).to.equal(undefined);
    expect(run.kinds()).to.deep.equal(["kv_get", "end:invalid_argument"]);
    expect(openai.requests.length).to.equal(requestsBefore);
    assertEndStreamInvariants(run.frames);
    expect(await failureLog(gw, run)).to.include({ cause: "blob_deadline", code: "invalid_argument" });
  });
});
