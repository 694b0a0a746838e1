// How runs end, on the wire (docs/protocol/cursor-run.md §10, §10.2–§10.6; docs/protocol/cursor-transport.md §7;
// docs/protocol/cursor-tools.md §3.1; docs/protocol/README.md §6.1, §6.2, §6.8): provider failures end with
// `unavailable` + aiserver.v1.ErrorDetails and nothing that looks like success; cancel and supersession end `canceled`
// after aborting what runs; SIGTERM ends live runs as canceled and exits 0; credentials never leak. The real gateway
// runs as a child process; only Cursor, the provider and the upstream are fakes.
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BedrockCredentialsSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { ErrorDetails_Error, ErrorDetailsSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { openStore } from "../../store/index.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants, type RunEnd, textDeltas } from "../support/observed-frames.js";
import { type ConnectionWatch, watchConnections } from "./connection-watch.js";
import { fixturePath, waitUntil } from "../support/util.js";

const MODEL_ID = "byok-e2e-endings";
const API_KEY = "sk-e2e-endings-9c41f2d07b6a";
const CLIENT_KEY = "sk-e2e-client-key-3e8a51c6";
/** Nothing listens there: a run that tried to relay would fail loudly instead of reaching the real backend. */
const DEAD_UPSTREAM = "http://127.0.0.1:9";

const repeat = (kind: string, times: number): string[] => Array<string>(times).fill(kind);
/**
 * A conversation's first run answered with plain text (docs/protocol/cursor-run.md §9, §10.2–§10.5): the six new blobs
 * (system and runtime
 * user roots, user message, assistant root, assistant step, turn) SET and acknowledged, then turn_ended, the staged
 * checkpoint, the settled one and its repeat, then EndStream {}.
 */
const firstTextRun = [
  "text_delta",
  "token_delta",
  "step_completed",
  ...repeat("kv_set", 6),
  "turn_ended",
  "checkpoint",
  "checkpoint",
  "checkpoint",
  "end:ok",
];

describe("e2e: how runs end", function () {
  this.timeout(10_000);

  let fake: FakeOpenAI;
  let proxy: ConnectionWatch;
  let dataDir: string;
  let gw: GatewayProcess;
  let client: CursorClient;

  before(async () => {
    fake = await startFakeOpenAI();
    proxy = await watchConnections(Number(new URL(fake.baseUrl).port));
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-endings-"));
    gw = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          { id: MODEL_ID, provider: "openai-chat", baseUrl: `${proxy.url}/v1`, apiKey: API_KEY, model: "gpt-e2e" },
        ],
      },
      upstream: DEAD_UPSTREAM,
    });
    client = new CursorClient(gw.url, {
      workspace: createWorkspace({ "README.md": "# demo\n" }),
      shell: (command) =>
        command === "tail -f server.log"
          ? [{ stdout: "listening on :8080\n", never: true }]
          : [{ stderr: `no script for ${command}\n`, exit: 127 }],
    });
  });

  after(async () => {
    await killAllGateways();
    await proxy?.close();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Every test ends here: the client saw no wire violation, every scripted turn was used, no key was logged. */
  const expectCleanRun = (): void => {
    expect(client.violations(), "client-side wire violations").to.deep.equal([]);
    expect(fake.pending(), "every scripted provider turn was consumed").to.equal(0);
    const stderr = gw.stderrLines().join("\n");
    expect(stderr).to.include('"msg":"gateway started"'); // the log is really being read
    for (const key of [API_KEY, CLIENT_KEY])
      expect(stderr, "docs/protocol/README.md §6.8: no key in the gateway's log").not.to.include(key);
  };

  const conversation = (): string => `conv-endings-${randomUUID()}`;

  it("provider HTTP 500 before the stream: unavailable EndStream with PROVIDER_ERROR details, and nothing else", async () => {
    // The provider echoes the key in its error body; the gateway must redact it before it reaches the client.
    fake.enqueue({
      status: 500,
      body: JSON.stringify({
        error: { message: `internal failure while serving key ${API_KEY}`, type: "server_error" },
      }),
    });
    const run = client.startRun({ conversationId: conversation(), modelId: MODEL_ID, text: "hello" });
    const end = failed(await run.done);

    expect(run.kinds()).to.deep.equal(["end:unavailable"]);
    expect(end.code).to.equal("unavailable");
    expect(end.message).to.include("HTTP 500");
    const details = end.errorDetails;
    expect(details, "aiserver.v1.ErrorDetails attached").to.not.equal(undefined);
    expect(details!.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    expect(details!.details?.title).to.equal("Server Error");
    expect(details!.details?.isRetryable).to.equal(true);
    expect(details!.details?.detail).to.include("HTTP 500").and.include("internal failure");
    expect(details!.isExpected).to.equal(false);
    expect(end.message).not.to.include(API_KEY);
    expect(Buffer.from(toBinary(ErrorDetailsSchema, details!)).toString("latin1")).not.to.include(API_KEY);
    expect(textDeltas(run.frames)).to.deep.equal([]);
    assertEndStreamInvariants(run.frames);
    expectCleanRun();
  });

  it("bare EOF mid-stream: the partial text was shown, the run fails, and the next run never sees it", async () => {
    const conversationId = conversation();
    // A completed first run gives the client a checkpoint to come back with.
    fake.enqueue({ text: "First answer.", usage: { prompt_tokens: 40, completion_tokens: 3 } });
    const first = client.startRun({ conversationId, modelId: MODEL_ID, text: "first question" });
    expect(await first.done).to.deep.equal({ ok: true });
    const checkpoint = first.lastCheckpoint();
    expect(checkpoint).to.not.equal(undefined);

    fake.enqueue({ bareEof: true, text: "Half-done answ" });
    const broken = client.startRun({ conversationId, modelId: MODEL_ID, text: "question B (breaks)", checkpoint });
    const end = failed(await broken.done);
    expect(broken.kinds()).to.deep.equal(["text_delta", "end:unavailable"]);
    expect(textDeltas(broken.frames)).to.deep.equal(["Half-done answ"]);
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    expect(broken.checkpoints, "a failed run publishes no checkpoint").to.deep.equal([]);
    assertEndStreamInvariants(broken.frames);

    // The client retries with the last checkpoint it had: the first run's.
    fake.enqueue({ text: "Second answer." });
    const retry = client.startRun({ conversationId, modelId: MODEL_ID, text: "question C", checkpoint });
    expect(await retry.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(retry.frames);

    const [firstRequest, brokenRequest, retryRequest] = fake.requests.slice(-3).map((r) => r.body as ChatBody);
    const retryText = JSON.stringify(retryRequest!.messages);
    expect(retryText).not.to.include("Half-done");
    expect(retryText).not.to.include("question B"); // the failed run's user message is not history either
    expect(retryText).to.include("question C");
    expect(JSON.stringify(brokenRequest!.messages)).to.include("question B");
    // Prefix-stable on top of the first run: its request, its answer, then this run's one user message.
    expect(retryRequest!.messages.slice(0, firstRequest!.messages.length + 1)).to.deep.equal([
      ...firstRequest!.messages,
      { role: "assistant", content: "First answer." },
    ]);
    expect(retryRequest!.messages.length).to.equal(firstRequest!.messages.length + 2);
    expect(retryRequest!.messages.at(-1)!.role).to.equal("user");
    expect(brokenRequest!.messages.length).to.equal(firstRequest!.messages.length + 2);
    expectCleanRun();
  });

  it("finish_reason length fails the run as unavailable, with no turn_ended and no checkpoint", async () => {
    fake.enqueue({ text: "This answer was cut", finish: "length", usage: { prompt_tokens: 30, completion_tokens: 8 } });
    const run = client.startRun({ conversationId: conversation(), modelId: MODEL_ID, text: "write a long essay" });
    const end = failed(await run.done);

    expect(run.kinds()).to.deep.equal(["text_delta", "token_delta", "end:unavailable"]);
    expect(end.message).to.match(/length/);
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    expect(end.errorDetails?.details?.isRetryable).to.equal(true);
    assertEndStreamInvariants(run.frames);
    expectCleanRun();
  });

  it("reasoning then EOF: thinking_completed is sent before the error EndStream", async () => {
    // A real DeepSeek recording, cut after the role chunk and two reasoning chunks (no finish, no [DONE]).
    const recorded = await readFile(
      fixturePath("providers/openai-compatible/deepseek-reasoner-reasoning-content-then-text.sse"),
      "utf8",
    );
    const events = recorded.split("\n\n").filter((e) => e.startsWith("data: "));
    const cut = join(dataDir, "reasoning-then-eof.sse");
    await writeFile(cut, `${events.slice(0, 3).join("\n\n")}\n\n`);
    fake.enqueue({ fixture: cut });
    const run = client.startRun({ conversationId: conversation(), modelId: MODEL_ID, text: "think first" });
    const end = failed(await run.done);

    // The two reasoning chunks usually arrive in one read and then go out as one thinking_delta.
    expect(run.kinds({ collapse: ["thinking_delta"] })).to.deep.equal([
      "thinking_delta",
      "thinking_completed",
      "end:unavailable",
    ]);
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    assertEndStreamInvariants(run.frames);
    expectCleanRun();
  });

  it("cancel during a never-ending Shell: one abort for that exec, then canceled, no turn_ended, no later checkpoint", async () => {
    fake.enqueue({ toolCalls: [{ id: "call_tail", name: "Shell", args: { command: "tail -f server.log" } }] });
    const run = client.startRun({ conversationId: conversation(), modelId: MODEL_ID, text: "watch the log" });
    await run.waitForFrame("tool_call_delta"); // the shell's stdout reached the UI: it is running
    const checkpointsBeforeCancel = run.checkpoints.length;
    const framesBeforeCancel = run.frames.length;
    await run.cancel("user pressed stop");
    const end = failed(await run.done);

    expect(end.code).to.equal("canceled");
    const exec = run.execLog.find((e) => e.case === "shellStreamArgs");
    expect(exec, "the shell was sent to the client").to.not.equal(undefined);
    expect(run.aborts).to.deep.equal([exec!.id]);
    expect(run.kinds().slice(framesBeforeCancel)).to.deep.equal(["abort", "end:canceled"]);
    expect(run.checkpoints.length).to.equal(checkpointsBeforeCancel);
    expect(run.kinds()).to.deep.equal([
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      ...repeat("kv_set", 4),
      "checkpoint", // the staged checkpoint, published before the tool runs (docs/protocol/cursor-tools.md §4.1)
      "tool_call_started",
      "exec:shell_stream_args",
      "tool_call_delta",
      "abort",
      "end:canceled",
    ]);
    assertEndStreamInvariants(run.frames);
    expectCleanRun();
  });

  it("a new run_request of the same conversation cancels the one waiting on a hanging provider", async () => {
    const conversationId = conversation();
    fake.enqueue({ hang: true });
    const requestsBefore = fake.requests.length;
    const old = client.startRun({ conversationId, modelId: MODEL_ID, text: "slow question" });
    await fake.waitForRequests(requestsBefore + 1);
    await old.waitForFrame("text_delta");
    const oldConnection = proxy.lastActive();
    expect(oldConnection.closed, "the hanging provider connection is open while the old run waits").to.equal(false);

    fake.enqueue({ text: "Fresh answer." });
    const fresh = client.startRun({ conversationId, modelId: MODEL_ID, text: "never mind, quick question" });
    const [oldEnd, freshEnd] = await Promise.all([old.done, fresh.done]);

    expect(failed(oldEnd).code).to.equal("canceled");
    expect(old.kinds()).to.deep.equal(["text_delta", "end:canceled"]);
    expect(old.checkpoints).to.deep.equal([]);
    expect(freshEnd).to.deep.equal({ ok: true });
    expect(fresh.kinds()).to.deep.equal(firstTextRun);
    expect(textDeltas(fresh.frames)).to.deep.equal(["Fresh answer."]);
    // The new run's provider request knows nothing of the old run: system prompt and its own user message only.
    const freshRequest = fake.requests.at(-1)!.body as ChatBody;
    expect(freshRequest.messages.map((m) => m.role)).to.deep.equal(["system", "user"]);
    expect(JSON.stringify(freshRequest.messages)).to.include("quick question").and.not.include("slow question");
    assertEndStreamInvariants(old.frames);
    assertEndStreamInvariants(fresh.frames);
    // The gateway dropped the old provider request instead of leaving it to stream into nowhere.
    await waitUntil(
      () => oldConnection.closed,
      2_000,
      () => "the old provider connection is still open",
    );
    expectCleanRun();
  });

  it("a run with Bedrock credentials ends failed_precondition saying they are not supported, never quoting them", async () => {
    const secretKey = "bedrock-secret-DO-NOT-LEAK-91c4";
    const run = client.startRun({
      conversationId: conversation(),
      modelId: "anthropic.claude-sonnet-4-5",
      text: "hi",
      customize: (request) => {
        request.requestedModel!.credentials = {
          case: "bedrockCredentials",
          value: create(BedrockCredentialsSchema, { accessKey: "AKIAFAKE", secretKey, region: "us-east-1" }),
        };
      },
    });
    const end = failed(await run.done);
    expect(run.kinds()).to.deep.equal(["end:failed_precondition"]);
    expect(end.message).to.include("Bedrock").and.include("not supported").and.not.include(secretKey);
    expect(gw.stderrLines().join("\n")).not.to.include(secretKey);
    assertEndStreamInvariants(run.frames);
    expectCleanRun();
  });

  it("an unconfigured model with requested_model credentials runs against that endpoint with that key", async () => {
    const before = fake.requests.length;
    fake.enqueue({ text: "Served with your key." });
    const run = client.startRun({
      conversationId: conversation(),
      modelId: "client-brought-model",
      text: "hi",
      credentials: { apiKey: CLIENT_KEY, baseUrl: fake.baseUrl },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    expect(run.kinds()).to.deep.equal(firstTextRun);
    assertEndStreamInvariants(run.frames);

    const [request] = fake.requests.slice(before);
    expect(request!.url).to.equal("/v1/chat/completions");
    expect(request!.headers.authorization).to.equal(`Bearer ${CLIENT_KEY}`);
    expect((request!.body as ChatBody).model).to.equal("client-brought-model");
    expectCleanRun();
  });
});

describe("e2e: SIGTERM while a run waits on its provider", function () {
  this.timeout(10_000);

  let fake: FakeOpenAI;
  let dataDir: string;

  before(async () => {
    fake = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-sigterm-"));
  });
  after(async () => {
    await killAllGateways();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("ends the live run canceled and exits 0", async () => {
    const gw = await startGatewayProcess({
      dataDir,
      config: {
        models: [{ id: MODEL_ID, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: API_KEY, model: "gpt-e2e" }],
      },
      upstream: DEAD_UPSTREAM,
    });
    const client = new CursorClient(gw.url);
    fake.enqueue({ hang: true });
    const run = client.startRun({
      conversationId: `conv-sigterm-${randomUUID()}`,
      modelId: MODEL_ID,
      text: "slow question",
    });
    await run.waitForFrame("text_delta");

    const [status, end] = await Promise.all([gw.stop("SIGTERM"), run.done]);
    expect(status).to.deep.equal({ code: 0, signal: null });
    expect(failed(end).code).to.equal("canceled");
    expect(run.kinds()).to.deep.equal(["text_delta", "end:canceled"]);
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
    expect(gw.stderrLines().join("\n")).not.to.include(API_KEY);
    expect(gw.stderrLines().join("\n")).not.to.include("terminal commit failed");
    // The terminal commit landed before the store closed (exactly one, docs/protocol/cursor-run.md §10.6).
    const store = await openStore({ dataDir });
    try {
      expect(await store.getRun(run.requestId)).to.deep.include({ status: "canceled", providerCallIndex: 0 });
    } finally {
      await store.close();
    }
  });
});

interface ChatBody {
  model: string;
  messages: Array<{ role: string; content: unknown }>;
}

function failed(end: RunEnd): Extract<RunEnd, { ok: false }> {
  if (end.ok) throw new Error("expected the run to fail, it succeeded");
  return end;
}
