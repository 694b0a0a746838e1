// Wire-level transport behaviour of the real gateway process (docs/protocol/cursor-transport.md §1–§3, §6, §7.2, §8.3):
// BidiAppend ordering and de-duplication, RunSSE attach order, reconnect replay, malformed appends and RunSSE frame
// compression. The gateway's own routes and the relay are in routes.test.ts.
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  AgentServerMessageSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { type AppendRecord, CursorClient, type HeldAppend } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import type { ObservedFrame } from "../support/observed-frames.js";
import { clientMessage } from "../support/run-start.js";
import { sleep, waitUntil } from "../support/util.js";
import {
  expectClean,
  frameBytes,
  MODEL,
  messageFrames,
  READ_ROUND_TRIP,
  READ_UNTIL_EXEC,
  readTurn,
  SHELL_ROUND_TRIP,
  TEXT_ONLY,
} from "./transport-kit.js";
import { postAppend } from "./raw-http.js";

describe("e2e: transport (BidiAppend, RunSSE)", function () {
  this.timeout(10_000);
  let dataDir: string;
  let openai: FakeOpenAI;
  let upstream: FakeUpstream;
  let gw: GatewayProcess;

  before(async function () {
    this.timeout(30_000);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-transport-"));
    openai = await startFakeOpenAI();
    upstream = await startFakeUpstream();
    gw = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          { id: MODEL, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: "sk-e2e-transport", model: "gpt-e2e" },
        ],
      },
      upstream: upstream.url,
    });
  });
  after(async () => {
    await killAllGateways();
    await openai.close();
    await upstream.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  describe("BidiAppend ordering (docs/protocol/cursor-transport.md §1, §6)", () => {
    it("holds appends after a missing append_seqno until it arrives, then processes them in order", async () => {
      openai.enqueue(readTurn("call_ooo", "a.txt"), { text: "read it" });
      let held: HeldAppend | undefined;
      const client = new CursorClient(gw.url, {
        workspace: createWorkspace({ "a.txt": "alpha\n" }),
        // The read_result append is held back, so its stream_close (next seqno) reaches the gateway first.
        hooks: { onExec: (_, { run }) => void (held = run.holdNextAppend()) },
      });
      const run = client.startRun({
        conversationId: `transport-ooo-${randomUUID()}`,
        modelId: MODEL,
        text: "read a.txt",
      });

      await run.waitForFrame("exec:read_args");
      const resultSeqno = await held!.seqno();
      await waitUntil(
        () => run.appends.some((a) => a.seqno === resultSeqno + 1n && a.response),
        5_000,
        () => "stream_close was not ACKed",
      );
      const close = run.appends.find((a) => a.seqno === resultSeqno + 1n)!;
      expect(close.message.message.case).to.equal("execClientControlMessage");
      expect(close.response).to.deep.equal({ status: 200 });
      // Processed out of order, the early stream_close would fail the run ("closed before its result").
      await sleep(200);
      expect(run.kinds()).to.deep.equal(READ_UNTIL_EXEC);

      expect(await held!.release()).to.deep.equal({ status: 200 });
      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal(READ_ROUND_TRIP);
      const result = run.appends.find((a) => a.seqno === resultSeqno)!;
      expect(result.sentAt).to.be.greaterThan(close.sentAt!);
      const completed = run.frames.find(
        (f) =>
          f.kind === "message" &&
          f.message.message.case === "interactionUpdate" &&
          f.message.message.value.message.case === "toolCallCompleted",
      )!;
      expect(completed.at).to.be.greaterThan(result.sentAt!);
      expectClean(client, run);
    });

    it("ACKs a duplicate append and ignores it: no second stdout delta, output reaches the model once", async () => {
      openai.enqueue(
        { toolCalls: [{ id: "call_dup", name: "Shell", args: { command: "echo hello" } }] },
        { text: "ran it" },
      );
      const requestsBefore = openai.requests.length;
      // The exit comes late so the duplicate lands while the exec is still running.
      const client = new CursorClient(gw.url, { shell: () => [{ stdout: "hello\n" }, { exit: 0, delayMs: 600 }] });
      const run = client.startRun({
        conversationId: `transport-dup-${randomUUID()}`,
        modelId: MODEL,
        text: "say hello",
      });

      const isStdout = (a: AppendRecord) => {
        const m = a.message.message;
        return (
          m.case === "execClientMessage" &&
          m.value.message.case === "shellStream" &&
          m.value.message.value.event.case === "stdout"
        );
      };
      await waitUntil(
        () => run.appends.some((a) => isStdout(a) && a.response),
        5_000,
        () => "stdout append was not ACKed",
      );
      const stdout = run.appends.find(isStdout)!;
      expect(await run.resendAppend(stdout.seqno)).to.deep.equal({ status: 200 });
      // A second run_request at seqno 1 on the live request is dropped by seqno, before the run ever sees it.
      expect(await run.resendAppend(1n)).to.deep.equal({ status: 200 });

      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal(SHELL_ROUND_TRIP);
      expect(run.appends.filter(isStdout)).to.have.length(2); // it really was sent twice
      const toolMessage = openai.requests[requestsBefore + 1]!.body.messages.at(-1);
      expect(toolMessage).to.deep.equal({ role: "tool", tool_call_id: "call_dup", content: "Exit code: 0\n\nhello\n" });
      expect(
        gw.stderrLines().filter((l) => l.includes(run.requestId) && l.includes("second run_request")),
      ).to.deep.equal([]);
      expectClean(client, run);
    });
  });

  describe("RunSSE attach order and reconnect (docs/protocol/cursor-transport.md §1, §6)", () => {
    for (const runSseFirst of [false, true]) {
      it(`runs to the end when ${runSseFirst ? "RunSSE opens before" : "the run_request append comes before"} the other`, async () => {
        openai.enqueue({ text: `hello (runSseFirst ${runSseFirst})` });
        const client = new CursorClient(gw.url);
        const run = client.startRun({
          conversationId: `transport-order-${runSseFirst}-${randomUUID()}`,
          modelId: MODEL,
          text: "hi",
          runSseFirst,
        });
        expect(await run.done).to.deep.equal({ ok: true });
        expect(run.kinds()).to.deep.equal(TEXT_ONLY);
        const firstFrameAt = run.frames[0]!.at;
        const runRequestSentAt = run.appends[0]!.sentAt!;
        if (runSseFirst) expect(runRequestSentAt).to.be.lessThan(firstFrameAt);
        else expect(run.appends[0]!.response).to.deep.equal({ status: 200 });
        expectClean(client, run);
      });
    }

    it("replays the whole backlog to a reconnected RunSSE, then continues to the end", async () => {
      openai.enqueue(readTurn("call_reconnect", "b.txt"), { text: "read b" });
      let answer!: () => void;
      const gate = new Promise<void>((resolve) => (answer = resolve));
      const client = new CursorClient(gw.url, {
        workspace: createWorkspace({ "b.txt": "beta\n" }),
        hooks: { onExec: () => ({ holdUntil: gate }) },
      });
      const run = client.startRun({
        conversationId: `transport-reconnect-${randomUUID()}`,
        modelId: MODEL,
        text: "read b.txt",
      });

      await run.waitForFrame("exec:read_args");
      const before = messageFrames(run.frames, 1);
      run.disconnect();
      await run.reconnect();
      await waitUntil(
        () => messageFrames(run.frames, 2).length >= before.length,
        5_000,
        () => "backlog was not replayed",
      );
      answer();

      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal([...READ_UNTIL_EXEC, "disconnect", ...READ_ROUND_TRIP]);
      const after = messageFrames(run.frames, 2);
      expect(after.slice(0, before.length).map(frameBytes)).to.deep.equal(before.map(frameBytes));
      expect(run.execLog).to.have.length(1); // the replayed Exec was recognised, not run twice
      expectClean(client, run);
    });
  });

  describe("malformed BidiAppend (docs/protocol/cursor-transport.md §3, §7.2)", () => {
    const hexOf = (m: AgentClientMessage) => Buffer.from(toBinary(AgentClientMessageSchema, m)).toString("hex");
    const appendBody = (fields: { data?: string; requestId?: string; seqno?: bigint }) =>
      toBinary(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, {
          data: fields.data ?? "",
          requestId: fields.requestId === undefined ? undefined : { requestId: fields.requestId },
          appendSeqno: fields.seqno ?? 1n,
        }),
      );
    const runRequestHex = hexOf(
      clientMessage({
        case: "runRequest",
        value: { conversationId: "transport-malformed", modelDetails: { modelId: MODEL } },
      }),
    );

    const cases: Array<{ name: string; body: () => Uint8Array; message: RegExp }> = [
      {
        name: "data with non-hex characters",
        body: () => appendBody({ data: `zz${runRequestHex}`, requestId: randomUUID() }),
        message: /^BidiAppend data is not valid hex$/,
      },
      {
        name: "odd-length hex data",
        body: () => appendBody({ data: runRequestHex.slice(0, -1), requestId: randomUUID() }),
        message: /^BidiAppend data is not valid hex$/,
      },
      {
        name: "truncated protobuf in data",
        body: () => appendBody({ data: runRequestHex.slice(0, -2), requestId: randomUUID() }),
        message: /^BidiAppend data is not a valid AgentClientMessage: premature EOF/,
      },
      {
        name: "a body that is not a BidiAppendRequest",
        body: () => Uint8Array.of(0x0f, 0x01, 0x02),
        message: /^BidiAppend body is not a valid BidiAppendRequest: /,
      },
      {
        name: "no request_id",
        body: () => appendBody({ data: runRequestHex }),
        message: /^BidiAppend carries no request_id$/,
      },
      {
        name: "no data at all",
        body: () => appendBody({ requestId: randomUUID() }),
        message: /^BidiAppend carries no data$/,
      },
    ];

    for (const c of cases) {
      it(`answers ${c.name} with a Connect invalid_argument error`, async () => {
        const res = await postAppend(gw.url, c.body());
        expect(res.status).to.equal(400);
        expect(res.headers["content-type"]).to.match(/^application\/json/);
        const error = JSON.parse(res.body.toString("utf8")) as { code: string; message: string };
        expect(error.code).to.equal("invalid_argument");
        expect(error.message).to.match(c.message);
      });
    }

    it("keeps serving runs after the malformed appends", async () => {
      openai.enqueue({ text: "still here" });
      const client = new CursorClient(gw.url);
      const run = client.startRun({
        conversationId: `transport-after-malformed-${randomUUID()}`,
        modelId: MODEL,
        text: "hi",
      });
      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal(TEXT_ONLY);
      expectClean(client, run);
    });

    it("accepts a JSON-encoded BidiAppend (content-type application/json) and routes its message", async () => {
      openai.enqueue(readTurn("call_json", "c.txt"));
      const client = new CursorClient(gw.url, { hooks: { onExec: () => ({ silent: true }) } });
      const run = client.startRun({
        conversationId: `transport-json-${randomUUID()}`,
        modelId: MODEL,
        text: "read c.txt",
      });
      await run.waitForFrame("exec:read_args");
      await run.appendsSettled();

      const seqno = run.appends.reduce((max, a) => (a.seqno > max ? a.seqno : max), 0n) + 1n;
      const cancel = clientMessage({
        case: "conversationAction",
        value: { action: { case: "cancelAction", value: { reason: "canceled over JSON" } } },
      });
      const json = toJsonString(
        BidiAppendRequestSchema,
        create(BidiAppendRequestSchema, {
          data: hexOf(cancel),
          requestId: { requestId: run.requestId },
          appendSeqno: seqno,
        }),
      );
      const res = await postAppend(gw.url, json, "application/json");
      expect(res.status).to.equal(200);
      expect(res.headers["content-type"]).to.match(/^application\/json/);
      expect(JSON.parse(res.body.toString("utf8"))).to.deep.equal({});

      expect(await run.done).to.deep.equal({
        ok: false,
        code: "canceled",
        message: "canceled over JSON",
        errorDetails: undefined,
      });
      expect(run.kinds()).to.deep.equal([...READ_UNTIL_EXEC, "abort", "end:canceled"]);
      expect(run.aborts).to.deep.equal([run.execLog[0]!.id]);
      expectClean(client, run);
    });
  });

  describe("RunSSE compression (docs/protocol/cursor-transport.md §2)", () => {
    const isLarge = (f: Extract<ObservedFrame, { kind: "message" }>) =>
      toBinary(AgentServerMessageSchema, f.message).length >= 1024;
    /** A checkpoint update is never gzipped (cursor/frames.ts isCheckpointFrame). */
    const compressible = (f: Extract<ObservedFrame, { kind: "message" }>) =>
      isLarge(f) && f.message.message.case !== "conversationCheckpointUpdate";

    it("gzips exactly the frames of 1 KiB or more but the checkpoint updates when the client accepts gzip", async () => {
      openai.enqueue({ text: "compressed?" });
      const client = new CursorClient(gw.url, { acceptGzip: true });
      const run = client.startRun({ conversationId: `transport-gzip-${randomUUID()}`, modelId: MODEL, text: "hi" });
      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal(TEXT_ONLY);
      const messages = messageFrames(run.frames, 1);
      expect(messages.filter((f) => f.compressed).length).to.be.greaterThan(0);
      expect(messages.map((f) => f.compressed)).to.deep.equal(messages.map(compressible));
      expectClean(client, run);
    });

    it("sends every frame uncompressed when the client does not accept gzip", async () => {
      openai.enqueue({ text: "plain" });
      const client = new CursorClient(gw.url, { acceptGzip: false });
      const run = client.startRun({ conversationId: `transport-plain-${randomUUID()}`, modelId: MODEL, text: "hi" });
      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal(TEXT_ONLY);
      const messages = messageFrames(run.frames, 1);
      expect(messages.some(isLarge)).to.equal(true);
      expect(messages.some((f) => f.compressed)).to.equal(false);
      expectClean(client, run);
    });
  });
});
