// Run-time protocol errors after RunSSE is open (docs/protocol/cursor-transport.md §7.5; docs/protocol/cursor-tools.md
// §2.5, §3.1; docs/protocol/cursor-run.md §5.2): each ends the run with an error EndStream (never turn_ended, never a
// text_delta), an error log line naming the request, and an abort for every Exec the client is still running. A refused
// blob SET fails the run before any checkpoint references it.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentClientMessageSchema, WriteResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { ErrorDetails_Error } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
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
  await waitUntil(
    () => find() !== undefined,
    3_000,
    () => `no error log line for request ${run.requestId}`,
  );
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
      config: {
        models: [
          { id: MODEL, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-e2e-protocol", model: "gpt-e2e" },
        ],
      },
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
    const run = client.startRun({
      conversationId: `protocol-${name}-${randomUUID()}`,
      modelId: MODEL,
      text: "read both",
    });
    return { client, run };
  }

  /** Both Reads of `twoReads` issued (exec ids 1 and 2), neither answered yet. */
  const UNTIL_TWO_EXECS = [
    ...repeat("partial_tool_call", 4),
    "token_delta",
    ...repeat("kv_set", 4),
    "checkpoint",
    "tool_call_started",
    "exec:read_args",
    "tool_call_started",
    "exec:read_args",
  ];
  const TEXT_UNTIL_FINAL_SETS = ["text_delta", "token_delta", "step_completed", ...repeat("kv_set", 6)];

  const execResult = (id: number) =>
    create(AgentClientMessageSchema, {
      message: { case: "execClientMessage", value: { id, message: { case: "readResult", value: {} } } },
    });

  /** The shared ending: error EndStream, no turn_ended or error text, the error logged with the request_id. */
  async function expectFailure(
    client: CursorClient,
    run: RunHandle,
    code: string,
    message: string,
  ): Promise<LogRecord> {
    const end = await run.done;
    if (end.ok) throw new Error(`expected the run to fail, it ended ok: ${JSON.stringify(run.kinds())}`);
    expect({ code: end.code, message: end.message }).to.deep.equal({ code, message });
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
    const log = await runFailureLog(gw, run);
    expect(log).to.include({ msg: "run failed", code, error: message });
    return log;
  }

  describe("exec protocol errors (docs/protocol/cursor-transport.md §7.5; docs/protocol/cursor-tools.md §2.5, §3.1)", () => {
    it("a result for an exec id that was never issued fails the run and aborts the running execs", async () => {
      const requestsBefore = openai.requests.length;
      const { client, run } = startTwoReads({ silent: true }, "unknown-id");
      await waitUntil(
        () => run.execLog.length === 2,
        5_000,
        () => `both execs expected, saw ${JSON.stringify(run.kinds())}`,
      );
      expect(await run.append(execResult(99))).to.deep.equal({ status: 200 }); // the append itself is well-formed

      const log = await expectFailure(
        client,
        run,
        "invalid_argument",
        "protocol error: exec message for unknown exec id 99",
      );
      expect(log).to.include({ cause: "exec_protocol" });
      expect(run.kinds()).to.deep.equal([...UNTIL_TWO_EXECS, "abort", "abort", "end:invalid_argument"]);
      expect(run.aborts).to.deep.equal([1, 2]);
      expect(openai.requests.length - requestsBefore).to.equal(1); // the tool round never settled into a next call
    });

    it("an exec message for an unknown id outside a tool round fails the run before any checkpoint", async () => {
      openai.enqueue({ text: "all done" });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let sets = 0;
      const client = new CursorClient(gw.url, {
        hooks: { onKv: () => (++sets === 1 ? { holdUntil: gate } : undefined) },
      });
      const run = client.startRun({ conversationId: `protocol-late-exec-${randomUUID()}`, modelId: MODEL, text: "hi" });
      await waitUntil(
        () => run.kinds().length === TEXT_UNTIL_FINAL_SETS.length,
        5_000,
        () => `final SETs expected, saw ${JSON.stringify(run.kinds())}`,
      );
      expect(await run.append(execResult(7))).to.deep.equal({ status: 200 });

      const log = await expectFailure(
        client,
        run,
        "invalid_argument",
        "protocol error: exec message for unknown exec id 7",
      );
      expect(log).to.include({ cause: "unknown_id" });
      release();
      expect(run.kinds()).to.deep.equal([...TEXT_UNTIL_FINAL_SETS, "end:invalid_argument"]);
      expect(run.checkpoints).to.deep.equal([]);
    });

    it("a result whose oneof does not match the call (Read answered with write_result) fails the run", async () => {
      const writeResult = create(WriteResultSchema, {
        result: { case: "success", value: { path: "a.txt", linesCreated: 1, fileSize: 6 } },
      });
      const { client, run } = startTwoReads({ result: { case: "writeResult", value: writeResult } }, "wrong-oneof");

      await expectFailure(
        client,
        run,
        "invalid_argument",
        "protocol error: Read: expected read_result but the client sent write_result",
      );
      // The wrong branch consumed exec 1 (docs/protocol/cursor-tools.md §3.4), so only exec 2, still running, is
      // aborted.
      expect(run.kinds()).to.deep.equal([...UNTIL_TWO_EXECS, "abort", "end:invalid_argument"]);
      expect(run.aborts).to.deep.equal([2]);
      expect(run.kinds()).not.to.include("tool_call_completed");
    });

    it("stream_close before the result fails the run and aborts the other running exec", async () => {
      const { client, run } = startTwoReads({ closeBeforeResult: true }, "close-early");

      await expectFailure(client, run, "invalid_argument", "protocol error: exec 1 stream closed before its result");
      expect(run.kinds()).to.deep.equal([...UNTIL_TWO_EXECS, "abort", "end:invalid_argument"]);
      expect(run.aborts).to.deep.equal([2]);
      await run.appendsSettled(); // the late read_result after the close is ACKed and dropped
      const late = run.appends.at(-1)!;
      const m = late.message.message;
      expect(m.case === "execClientMessage" && m.value.message.case).to.equal("readResult");
      expect(late.response).to.deep.equal({ status: 200 });
      expect(run.kinds()).not.to.include("tool_call_completed");
    });

    it("exec throw fails the run (it is not a tool result) and aborts the other running exec", async () => {
      const { client, run } = startTwoReads({ throw: "boom: permission denied" }, "throw");

      const log = await expectFailure(
        client,
        run,
        "invalid_argument",
        "protocol error: exec 1 threw: boom: permission denied",
      );
      expect(log).to.include({ cause: "exec_protocol" });
      expect(run.kinds()).to.deep.equal([...UNTIL_TWO_EXECS, "abort", "end:invalid_argument"]);
      expect(run.aborts).to.deep.equal([2]);
    });
  });

  describe("model output outside the run's manifest (docs/protocol/cursor-tools.md §1.2)", () => {
    it("a call of a tool the mode does not offer fails the run before any card or exec", async () => {
      openai.enqueue({ text: "On it.", toolCalls: [{ id: "call_x", name: "Teleport", args: { to: "mars" } }] });
      const client = new CursorClient(gw.url);
      const run = client.startRun({
        conversationId: `protocol-unknown-tool-${randomUUID()}`,
        modelId: MODEL,
        text: "go",
      });

      const log = await expectFailure(
        client,
        run,
        "invalid_argument",
        'protocol error: model called unknown tool "Teleport"',
      );
      expect(log).to.include({ cause: "model_protocol" });
      expect(run.kinds()).to.deep.equal(["text_delta", "end:invalid_argument"]);
      expect(run.execLog).to.deep.equal([]);
    });
  });

  describe("refused blob SET (docs/protocol/cursor-run.md §5.2, §10.2–§10.5)", () => {
    /** Refuses the n-th SET the client sees and records which blob it was. */
    function refusingClient(n: number, files: Record<string, string> = {}) {
      let sets = 0;
      const refused: { hex?: string } = {};
      const client = new CursorClient(gw.url, {
        workspace: createWorkspace(files),
        hooks: {
          onKv: (kv) => {
            if (kv.message.case !== "setBlobArgs" || ++sets !== n) return undefined;
            refused.hex = blobHex(kv.message.value.blobId);
            return { error: "disk full" };
          },
        },
      });
      return { client, refused };
    }

    function expectNeverReferenced(client: CursorClient, run: RunHandle, hex: string): void {
      for (const checkpoint of run.checkpoints)
        expect(blobClosure(checkpoint, client.blobs).referenced).not.to.include(hex);
      expect(client.blobs.has(hex)).to.equal(false);
    }

    it("a refused SET of a tool round's settled checkpoint fails the run; only the staged checkpoint was published", async () => {
      openai.enqueue({ toolCalls: [{ id: "call_r", name: "Read", args: { path: "a.txt" } }] });
      const requestsBefore = openai.requests.length;
      const { client, refused } = refusingClient(6, { "a.txt": "alpha\n" }); // SETs 1–4 staged, 5–8 settled
      const run = client.startRun({
        conversationId: `protocol-kv-settled-${randomUUID()}`,
        modelId: MODEL,
        text: "read a",
      });

      const log = await expectFailure(client, run, "unavailable", `client refused blob SET 5: disk full`);
      expect(log).to.include({ cause: "round_checkpoint" });
      expect(run.kinds()).to.deep.equal([
        "partial_tool_call",
        "partial_tool_call",
        "token_delta",
        ...repeat("kv_set", 4),
        "checkpoint",
        "tool_call_started",
        "exec:read_args",
        "tool_call_completed",
        ...repeat("kv_set", 4),
        "end:unavailable",
      ]);
      expect(run.checkpoints).to.have.length(1);
      expectNeverReferenced(client, run, refused.hex!);
      expect(openai.requests.length - requestsBefore).to.equal(1); // no model call after the failed barrier
    });

    it("a refused SET of the final checkpoint fails the run with no turn_ended and no checkpoint", async () => {
      openai.enqueue({ text: "final words" });
      const { client, refused } = refusingClient(3);
      const run = client.startRun({ conversationId: `protocol-kv-final-${randomUUID()}`, modelId: MODEL, text: "hi" });

      const end = await run.done;
      const log = await expectFailure(client, run, "unavailable", "client refused blob SET 2: disk full");
      expect(log).to.include({ cause: "final_checkpoint" });
      // A checkpoint failure is a retryable server-side error, not a provider error (engine/run-end.ts).
      expect(!end.ok && end.errorDetails?.details?.isRetryable).to.equal(true);
      expect(!end.ok && end.errorDetails?.error).to.equal(ErrorDetails_Error.INTERNAL);
      expect(run.kinds()).to.deep.equal([...TEXT_UNTIL_FINAL_SETS, "end:unavailable"]);
      expect(run.checkpoints).to.deep.equal([]);
      expectNeverReferenced(client, run, refused.hex!);
    });
  });
});
