// Run-time protocol errors after RunSSE is open (seed 003 §26.6, §26.7, §26.10, §20.1): each ends the run with an
// error EndStream (never turn_ended, never a text_delta), an error log line naming the request, and an abort for
// every Exec the client is still running. A refused blob SET fails the run before any checkpoint references it.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentClientMessageSchema, WriteResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecPlan } from "../support/client-responder.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient, type RunHandle } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI, type StreamedTurn } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants, blobClosure, blobHex } from "../support/observed-frames.js";
import { waitUntil } from "../support/util.js";

const MODEL = "byok-e2e";

function repeat(kind: string, times: number): string[] {
  return Array.from({ length: times }, () => kind);
}

/** One model response asking for two Reads; the first misbehaves, the second is left running by the client. */
const twoReads: StreamedTurn = {
  toolCalls: [
    { id: "call_a", name: "Read", args: { path: "a.txt" } },
    { id: "call_b", name: "Read", args: { path: "b.txt" } },
  ],
};

interface LogRecord {
  level: string;
  msg: string;
  request_id?: string;
  code?: string;
  error?: string;
}

function logRecords(gw: GatewayProcess): LogRecord[] {
  return gw.stderrLines().flatMap((line) => {
    try {
      return [JSON.parse(line) as LogRecord];
    } catch {
      return [];
    }
  });
}

async function runFailureLog(gw: GatewayProcess, run: RunHandle): Promise<LogRecord> {
  const find = () => logRecords(gw).find((r) => r.level === "error" && r.request_id === run.requestId);
  await waitUntil(() => find() !== undefined, 3_000, () => `no error log line for request ${run.requestId}`);
  return find()!;
}

describe("e2e: run-time protocol errors", function () {
  this.timeout(10_000);
  let dataDir: string;
  let openai: FakeOpenAI;
  let gw: GatewayProcess;

  before(async function () {
    this.timeout(30_000);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-protocol-"));
    openai = await startFakeOpenAI();
    gw = await startGatewayProcess({
      dataDir,
      config: { models: [{ id: MODEL, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-e2e-protocol", model: "gpt-e2e" }] },
    });
  });
  after(async () => {
    await killAllGateways();
    await openai.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  function startTwoReads(firstPlan: ExecPlan, name: string): { client: CursorClient; run: RunHandle } {
    openai.enqueue(twoReads);
    const client = new CursorClient(gw.url, {
      workspace: createWorkspace({ "a.txt": "alpha\n", "b.txt": "beta\n" }),
      hooks: { onExec: (_, { index }) => (index === 0 ? firstPlan : { silent: true }) },
    });
    const run = client.startRun({ conversationId: `protocol-${name}-${randomUUID()}`, modelId: MODEL, text: "read both" });
    return { client, run };
  }

  const UNTIL_TWO_EXECS = [
    ...repeat("partial_tool_call", 4), "token_delta", ...repeat("kv_set", 4), "checkpoint",
    "tool_call_started", "exec:read_args", "tool_call_started", "exec:read_args",
  ];

  /** The shared ending of every case: error EndStream, no turn_ended, the error logged with the request_id. */
  async function expectProtocolFailure(client: CursorClient, run: RunHandle, message: string): Promise<void> {
    const end = await run.done;
    expect(end).to.deep.equal({ ok: false, code: "invalid_argument", message, errorDetails: undefined });
    expect(message.startsWith("protocol error")).to.equal(true);
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
    const log = await runFailureLog(gw, run);
    expect(log).to.include({ msg: "run failed", code: "invalid_argument", error: message });
  }

  for (const c of [
    { name: "abort-check", plan: { silent: true } as ExecPlan },
    { name: "wrong-oneof", plan: { result: { case: "writeResult", value: create(WriteResultSchema, { result: { case: "success", value: { path: "a.txt" } } }) } } as ExecPlan },
    { name: "close-early", plan: { closeBeforeResult: true } as ExecPlan },
    { name: "throw", plan: { throw: "boom" } as ExecPlan },
  ]) {
    it(`explore ${c.name}`, async () => {
      const { run } = startTwoReads(c.plan, c.name);
      if (c.name === "abort-check") {
        await waitUntil(() => run.execLog.length === 2, 5000, () => "x");
        await run.append(create(AgentClientMessageSchema, { message: { case: "execClientMessage", value: { id: 99, message: { case: "readResult", value: {} } } } }));
      }
      console.log(await run.done, run.kinds(), run.aborts);
      await run.appendsSettled();
      console.log(run.appends.map((a) => [a.seqno, a.message.message.case, (a.message.message.value as any)?.message?.case]));
      void expectProtocolFailure;
    });
  }
  void blobClosure; void blobHex; void UNTIL_TWO_EXECS;
});
