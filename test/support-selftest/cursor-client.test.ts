import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createHash } from "node:crypto";
import {
  ConversationStepSchema,
  ConversationTurnStructureSchema,
  UserMessageSchema,
  WriteResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import {
  CustomErrorDetailsSchema,
  ErrorDetails_Error,
  ErrorDetailsSchema,
} from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import {
  appendKinds,
  type ReceivedAppend,
  type ScriptedGateway,
  type ServerMessageInit,
  startScriptedGateway,
} from "./scripted-gateway.js";

const sha = (data: Uint8Array): Uint8Array => new Uint8Array(createHash("sha256").update(data).digest());
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

const kvSet = (id: number, data: Uint8Array, blobId = sha(data)): ServerMessageInit => ({
  case: "kvServerMessage",
  value: { id, message: { case: "setBlobArgs", value: { blobId, blobData: data } } },
});
const read = (id: number, path: string): ServerMessageInit => ({
  case: "execServerMessage",
  value: { id, message: { case: "readArgs", value: { path, toolCallId: `call-${id}` } } },
});
const shell = (id: number, command: string): ServerMessageInit => ({
  case: "execServerMessage",
  value: { id, message: { case: "shellStreamArgs", value: { command, workingDirectory: "/workspace" } } },
});
const checkpoint = (roots: Uint8Array[], turns: Uint8Array[] = []): ServerMessageInit => ({
  case: "conversationCheckpointUpdate",
  value: { rootPromptMessagesJson: roots, turns },
});
const turnEnded: ServerMessageInit = {
  case: "interactionUpdate",
  value: { message: { case: "turnEnded", value: { inputTokens: 5n } } },
};
const textDelta = (text: string): ServerMessageInit => ({
  case: "interactionUpdate",
  value: { message: { case: "textDelta", value: { text } } },
});

const isRunRequest = (a: ReceivedAppend): boolean => a.message.message.case === "runRequest";
const isStreamClose = (a: ReceivedAppend): boolean =>
  a.message.message.case === "execClientControlMessage" && a.message.message.value.message.case === "streamClose";

describe("scripted Cursor client against a hand-played gateway", () => {
  let gw: ScriptedGateway;
  beforeEach(async () => (gw = await startScriptedGateway()));
  afterEach(() => gw.close());

  it("stores and acknowledges SET blobs, answers reads from its workspace, closes each Exec, and records the run", async () => {
    const root = utf8('{"role":"system","content":"be brief"}');
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(kvSet(0, root));
      s.send(read(1, "src/a.ts"));
      s.send(read(2, "/workspace/missing.ts"));
      await gw.waitForAppends(isStreamClose, 2);
      s.send(checkpoint([sha(root)]));
      s.send(turnEnded);
      for (let i = 0; i < 3; i++) s.send(checkpoint([sha(root)]));
      s.end();
    });
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "src/a.ts": "export const a = 1;\n" }) });
    const run = client.startRun({
      conversationId: "conv-1",
      modelId: "byok-gpt",
      text: "read a.ts",
      credentials: { apiKey: "sk-x" },
    });

    expect(await run.done).to.deep.equal({ ok: true });
    expect(run.kinds()).to.deep.equal([
      "kv_set",
      "exec:read_args",
      "exec:read_args",
      "checkpoint",
      "turn_ended",
      "checkpoint",
      "checkpoint",
      "checkpoint",
      "end:ok",
    ]);
    assertEndStreamInvariants(run.frames);
    await run.appendsSettled();
    expect(appendKinds(gw.appends)).to.deep.equal([
      "runRequest",
      "kv:setBlobResult",
      "exec:readResult",
      "control:streamClose",
      "exec:readResult",
      "control:streamClose",
    ]);
    expect(gw.appends.map((a) => a.seqno)).to.deep.equal([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(gw.appends.every((a) => a.requestId === run.requestId)).to.equal(true);

    const runRequest = gw.appends[0]!.message.message;
    if (runRequest.case !== "runRequest") throw new Error("first append must be the run request");
    expect(runRequest.value.conversationId).to.equal("conv-1");
    expect(runRequest.value.requestedModel?.credentials).to.deep.include({ case: "apiKeyCredentials" });
    expect(runRequest.value.action?.action.case).to.equal("userMessageAction");

    const [setResult, found, , missing] = gw.appends.slice(1).map((a) => a.message.message.value);
    expect(setResult).to.deep.include({ id: 0 });
    expect(JSON.stringify(found, (_, v) => (typeof v === "bigint" ? Number(v) : v))).to.include("export const a = 1;");
    expect((missing as { message: { value: { result: { case: string } } } }).message.value.result.case).to.equal(
      "fileNotFound",
    );

    expect(client.blobs.get(Buffer.from(sha(root)).toString("hex"))).to.deep.equal(root);
    expect(run.execLog.map((e) => [e.id, e.case])).to.deep.equal([
      [1, "readArgs"],
      [2, "readArgs"],
    ]);
    expect(run.checkpoints).to.have.length(4);
    expect(client.violations()).to.deep.equal([]);
  });

  it("refuses a SET whose id is not the SHA-256 of its data and flags checkpoints that reference unacknowledged blobs", async () => {
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(kvSet(0, utf8("data"), sha(utf8("other"))));
      s.send(checkpoint([sha(utf8("never sent"))]));
      s.end();
    });
    const client = new CursorClient(gw.url);
    const run = client.startRun({ conversationId: "c", modelId: "m", text: "x" });
    await run.done;
    await run.appendsSettled();
    expect(client.violations().map((v) => v.kind)).to.deep.equal(["blob_id_mismatch", "checkpoint_before_ack"]);
    const result = gw.appends[1]!.message.message;
    expect(
      result.case === "kvClientMessage" &&
        result.value.message.case === "setBlobResult" &&
        result.value.message.value.error?.message,
    ).to.match(/SHA-256/);
    expect(client.blobs.size).to.equal(0);
  });

  it("follows turns, user messages and steps when computing a checkpoint's blob closure", async () => {
    const step = toBinary(
      ConversationStepSchema,
      create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text: "hi" } } }),
    );
    const user = toBinary(UserMessageSchema, create(UserMessageSchema, { text: "hello" }));
    const turn = toBinary(
      ConversationTurnStructureSchema,
      create(ConversationTurnStructureSchema, {
        turn: { case: "agentConversationTurn", value: { userMessage: sha(user), steps: [sha(step)] } },
      }),
    );
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(kvSet(0, user));
      s.send(kvSet(1, turn)); // the step blob is never SET
      await gw.waitForAppends((a) => a.message.message.case === "kvClientMessage", 2);
      s.send(checkpoint([], [sha(turn)]));
      s.end();
    });
    const client = new CursorClient(gw.url);
    await client.startRun({ conversationId: "c", modelId: "m", text: "x" }).done;
    expect(client.violations()).to.deep.equal([
      { kind: "checkpoint_before_ack", detail: `checkpoint #1 references ${Buffer.from(sha(step)).toString("hex")}` },
    ]);
  });

  it("streams a scripted shell as start, output, exit, then stream_close, and can hold one Exec until another is answered", async () => {
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(read(1, "a.txt"));
      s.send(shell(2, "echo hi"));
      await gw.waitForAppends(isStreamClose, 2);
      s.end();
    });
    const client = new CursorClient(gw.url, {
      workspace: createWorkspace({ "a.txt": "A" }),
      shell: (command) => (command === "echo hi" ? [{ stdout: "hi\n", exit: 0 }] : [{ exit: 127 }]),
    });
    const run = client.startRun({
      conversationId: "c",
      modelId: "m",
      text: "x",
      hooks: { onExec: (_, { index, run }) => (index === 0 ? { holdUntil: run.execAnswered(1) } : undefined) },
    });
    await run.done;
    await run.appendsSettled();
    expect(appendKinds(gw.appends.slice(1))).to.deep.equal([
      "shell:start",
      "shell:stdout",
      "shell:exit",
      "control:streamClose",
      "exec:readResult",
      "control:streamClose",
    ]);
  });

  it("can answer with a wrong branch, throw, or close before the result", async () => {
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(read(1, "a.txt"));
      s.send(read(2, "a.txt"));
      s.send(read(3, "a.txt"));
      await gw.waitForAppends((a) => a.message.message.case !== "runRequest", 4);
      s.end();
    });
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.txt": "A" }) });
    const plans = [
      {
        result: {
          case: "writeResult" as const,
          value: create(WriteResultSchema, { result: { case: "success", value: { path: "a.txt" } } }),
        },
      },
      { throw: "disk on fire" },
      { closeInsteadOfResult: true },
    ];
    const run = client.startRun({
      conversationId: "c",
      modelId: "m",
      text: "x",
      hooks: { onExec: (_, { index }) => plans[index] },
    });
    await run.done;
    await run.appendsSettled();
    expect(appendKinds(gw.appends.slice(1))).to.deep.equal([
      "exec:writeResult",
      "control:streamClose",
      "control:throw",
      "control:streamClose",
    ]);
  });

  it("decodes gzip frames and an error end-stream with aiserver.v1.ErrorDetails", async () => {
    const details = create(ErrorDetailsSchema, {
      error: ErrorDetails_Error.PROVIDER_ERROR,
      details: create(CustomErrorDetailsSchema, { title: "Server Error", detail: "boom", isRetryable: true }),
    });
    const value = Buffer.from(toBinary(ErrorDetailsSchema, details)).toString("base64").replace(/=+$/, "");
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(textDelta("x".repeat(2000)), { gzip: true });
      s.end(
        JSON.stringify({
          error: {
            code: "unavailable",
            message: "provider error",
            details: [{ type: "aiserver.v1.ErrorDetails", value }],
          },
        }),
      );
    });
    const run = new CursorClient(gw.url).startRun({ conversationId: "c", modelId: "m", text: "x" });
    const end = await run.done;
    expect(end.ok).to.equal(false);
    if (end.ok) return;
    expect([end.code, end.message]).to.deep.equal(["unavailable", "provider error"]);
    expect(end.errorDetails?.details?.title).to.equal("Server Error");
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    expect(run.kinds()).to.deep.equal(["text_delta", "end:unavailable"]);
    expect(run.frames[0]).to.deep.include({ compressed: true });
    assertEndStreamInvariants(run.frames);
  });

  it("reports a body that ends without an end-stream, and an envelope after the end-stream", async () => {
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(textDelta("half"));
      s.destroy();
    });
    const run = new CursorClient(gw.url).startRun({ conversationId: "c", modelId: "m", text: "x" });
    expect(await run.done).to.deep.include({ ok: false, code: "missing_end_stream" });
    expect(run.kinds()).to.deep.equal(["text_delta", "eof"]);
    expect(() => assertEndStreamInvariants(run.frames)).to.throw(/exactly one end-stream/);

    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest, 2);
      s.raw(new Uint8Array([2, 0, 0, 0, 2, 123, 125])); // end-stream {}
      s.send(textDelta("late"));
      s.close();
    });
    const late = new CursorClient(gw.url).startRun({ conversationId: "c", modelId: "m", text: "x" });
    expect(await late.done).to.deep.equal({ ok: true });
    await new Promise((r) => setTimeout(r, 50));
    expect(late.violations.map((v) => v.detail)).to.deep.equal(["RunSSE sent an envelope after the end-stream"]);
  });

  it("does not answer replayed requests again after a reconnect", async () => {
    let connections = 0;
    gw.onRunSse(async (s) => {
      connections++;
      if (connections === 1) await gw.waitForAppends(isRunRequest);
      s.send(read(1, "a.txt"));
      if (connections === 2) s.end();
    });
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.txt": "A" }) });
    const run = client.startRun({ conversationId: "c", modelId: "m", text: "x" });
    await gw.waitForAppends(isStreamClose);
    run.disconnect();
    await run.reconnect();
    expect(await run.done).to.deep.equal({ ok: true });
    await run.appendsSettled();
    expect(run.kinds()).to.deep.equal(["exec:read_args", "disconnect", "exec:read_args", "end:ok"]);
    expect(appendKinds(gw.appends)).to.deep.equal(["runRequest", "exec:readResult", "control:streamClose"]);
    expect(client.violations()).to.deep.equal([]);
  });

  it("can hold back one append so the next seqno arrives first, and resend an append as a duplicate", async () => {
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(kvSet(0, utf8("one")));
      s.send(kvSet(1, utf8("two")));
    });
    const run = new CursorClient(gw.url).startRun({ conversationId: "c", modelId: "m", text: "x" });
    const held = run.holdNextAppend(); // the run request has seqno 1, so this catches the first SET result
    await gw.waitForAppends((a) => a.seqno === 3n);
    expect(await held.seqno()).to.equal(2n);
    await held.release();
    await run.resendAppend(1n);
    expect(gw.appends.map((a) => a.seqno)).to.deep.equal([1n, 3n, 2n, 1n]);
  });

  it("records aborts and stops answering an aborted Exec", async () => {
    gw.onRunSse(async (s) => {
      await gw.waitForAppends(isRunRequest);
      s.send(shell(7, "sleep forever"));
      await gw.waitForAppends((a) => a.message.message.case === "execClientMessage");
      s.send({ case: "execServerControlMessage", value: { message: { case: "abort", value: { id: 7 } } } });
      s.send(read(8, "a.txt"));
      s.send({ case: "execServerControlMessage", value: { message: { case: "abort", value: { id: 8 } } } });
      setTimeout(() => s.end(JSON.stringify({ error: { code: "canceled", message: "canceled" } })), 150);
    });
    const client = new CursorClient(gw.url, {
      workspace: createWorkspace({ "a.txt": "A" }),
      shell: () => [{ stdout: "z", never: true }],
    });
    const run = client.startRun({
      conversationId: "c",
      modelId: "m",
      text: "x",
      hooks: { onExec: (e) => (e.id === 8 ? { delayMs: 50 } : undefined) },
    });
    await run.cancel("stop");
    expect(await run.done).to.deep.include({ ok: false, code: "canceled" });
    await run.appendsSettled();
    expect(run.aborts).to.deep.equal([7, 8]);
    expect(appendKinds(gw.appends)).to.deep.equal(["runRequest", "conversationAction", "shell:start", "shell:stdout"]);
  });
});
