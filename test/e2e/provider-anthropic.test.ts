// Wire-level closed loop for an Anthropic model (docs/protocol/cursor-run.md §7, §8.1, §8.5; docs/protocol/README.md
// §6.4, §6.5, §6.8): the real gateway, configured with `provider: anthropic`, talks to a fake Messages API. The first
// response thinks (signed), says something and calls Read; the client runs the tool; the second call must carry the
// thinking block with its signature unchanged, first in the assistant turn, and the result as a tool_result string; the
// final text ends the turn. Then the gateway is restarted and the conversation continues prefix-stable, the signed
// thinking block still replayed byte for byte from the stored history. Further cases: a conversation whose tool round
// ran on openai-chat continues on anthropic with a valid request, and a run is routed by its own sk-ant- key.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RequestedModel_ModelParameterValueSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeAnthropic, type RecordedRequest, startFakeAnthropic } from "../support/fake-anthropic.js";
import { startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import { breakpointsAt, withoutBreakpoints } from "../support/anthropic-breakpoints.js";
import { assertCleanSuccess, updates } from "./tools-kit.js";

const MODEL_ID = "byok-e2e-claude";
const API_KEY = "sk-ant-e2e-0f3b9c27d1";
const DEAD_UPSTREAM = "http://127.0.0.1:9";
const THINKING = "The user wants the file's purpose; read it first.";
const SIGNATURE = "EqQBCkYIBxgCKkB+e2e/signature==";
const FILE = "export function main() {\n  console.log('hi');\n}\n";
const FIRST_ANSWER = "src/app.ts exports main(), which prints a greeting.";
const SECOND_ANSWER = "Rename it to start() and update the one caller.";

const repeat = (kind: string, times: number): string[] => Array<string>(times).fill(kind);
const checkpointTail = ["turn_ended", "checkpoint", "checkpoint", "checkpoint", "end:ok"];
const effortHigh = (runRequest: { requestedModel?: { parameters: unknown[] } }) => {
  runRequest.requestedModel!.parameters = [
    create(RequestedModel_ModelParameterValueSchema, { id: "effort", value: "high" }),
  ];
};

/**
 * Request N+1 starts with request N's messages, byte for byte as JSON (docs/protocol/README.md §6.4), the moving cache
 * breakpoints apart; what was added is returned as sent.
 */
function addedAfter(earlier: RecordedRequest, later: RecordedRequest): unknown[] {
  const before = withoutBreakpoints(earlier.body.messages);
  const after = withoutBreakpoints(later.body.messages);
  expect(JSON.stringify(after.slice(0, before.length))).to.equal(JSON.stringify(before));
  expect(JSON.stringify(later.body.system)).to.equal(JSON.stringify(earlier.body.system));
  expect(JSON.stringify(later.body.tools)).to.equal(JSON.stringify(earlier.body.tools));
  expect(breakpointsAt(later.body.messages), "this call's last message and the previous call's").to.deep.equal([
    before.length - 1,
    after.length - 1,
  ]);
  return (later.body.messages as unknown[]).slice(before.length);
}

describe("e2e: anthropic provider closed loop with signed thinking, then a restart", function () {
  this.timeout(20_000);

  let fake: FakeAnthropic;
  const dirs: string[] = [];

  before(async () => (fake = await startFakeAnthropic()));
  after(async () => {
    await killAllGateways();
    await fake?.close();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  afterEach(() => expect(fake.pending(), "every scripted provider reply was consumed").to.equal(0));

  const freshDir = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), "byok-e2e-anthropic-"));
    dirs.push(dir);
    return dir;
  };
  const startGateway = (dataDir: string, more: object[] = []) =>
    startGatewayProcess({
      dataDir,
      config: {
        models: [
          { id: MODEL_ID, provider: "anthropic", baseUrl: fake.baseUrl, apiKey: API_KEY, model: "claude-e2e" },
          ...more,
        ],
      },
      upstream: DEAD_UPSTREAM,
    });

  it("replays the signed thinking block unchanged on the next call and across a restart", async () => {
    const dataDir = await freshDir();
    const gw = await startGateway(dataDir);
    const workspace = createWorkspace({ "src/app.ts": FILE });
    const client = new CursorClient(gw.url, { workspace });
    const conversationId = `conv-anthropic-${randomUUID()}`;
    fake.enqueue(
      {
        blocks: [
          { type: "thinking", thinking: THINKING, signature: SIGNATURE },
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_read_app", name: "Read", input: { path: "src/app.ts" } },
        ],
        usage: { input_tokens: 900, output_tokens: 40, cache_read_input_tokens: 600, cache_creation_input_tokens: 100 },
        chunkSize: 9,
      },
      { blocks: [{ type: "text", text: FIRST_ANSWER }] },
    );
    const run = client.startRun({
      conversationId,
      modelId: MODEL_ID,
      text: "what does src/app.ts do?",
      customize: effortHigh,
    });
    expect(await run.done).to.deep.equal({ ok: true });
    // Deltas of one provider read go out as one frame: repeated deltas are collapsed, the texts checked joined.
    expect(run.kinds({ collapse: ["thinking_delta", "text_delta"] })).to.deep.equal([
      "thinking_delta",
      "thinking_completed",
      "text_delta",
      "partial_tool_call",
      ...repeat("partial_tool_call", 3),
      "token_delta",
      ...repeat("kv_set", 6),
      "checkpoint", // staged: roots, user message, thinking and text steps, turn
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...repeat("kv_set", 4),
      "checkpoint", // settled
      "text_delta",
      "token_delta",
      "step_completed",
      ...repeat("kv_set", 3),
      ...checkpointTail,
    ]);
    assertCleanSuccess(run, client);
    expect(
      updates(run, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).to.equal(THINKING);
    // Anthropic's input_tokens excludes the cache; the turn's prompt total includes reads and writes.
    expect(updates(run, "turnEnded")[0]).to.deep.include({
      inputTokens: 1612n,
      outputTokens: 45n,
      cacheReadTokens: 600n,
      cacheWriteTokens: 100n,
    });
    // …and the gateway's log shows the cache counts the provider reported.
    const completed = gw
      .stderrLines()
      .filter((line) => line.includes('"provider call completed"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(completed[0]).to.include({ cache_read_tokens: 600, cache_write_tokens: 100 });

    const [first, second] = fake.messageRequests();
    for (const request of [first!, second!]) {
      expect(request.headers["x-api-key"]).to.equal(API_KEY);
      expect(request.headers["anthropic-version"]).to.equal("2023-06-01");
      expect(request.body.model).to.equal("claude-e2e");
      expect(request.body.thinking).to.deep.equal({ type: "enabled", budget_tokens: 16384 });
    }
    expect(first!.body.messages).to.have.length(1);
    expect(addedAfter(first!, second!)).to.deep.equal([
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: THINKING, signature: SIGNATURE },
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_read_app", name: "Read", input: { path: "src/app.ts" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_read_app", content: FILE, cache_control: { type: "ephemeral" } },
        ],
      },
    ]);

    // Restart: the same data dir, the client's last checkpoint, a new user message.
    expect(await gw.stop("SIGTERM")).to.deep.equal({ code: 0, signal: null });
    expect(gw.stderrLines().join("\n")).not.to.include(API_KEY);
    const again = await startGateway(dataDir);
    const reopened = new CursorClient(again.url, { workspace });
    for (const data of client.blobs.values()) reopened.putBlob(data);
    fake.enqueue({ blocks: [{ type: "text", text: SECOND_ANSWER }] });
    const next = reopened.startRun({
      conversationId,
      modelId: MODEL_ID,
      text: "now rename main",
      checkpoint: run.lastCheckpoint()!,
      customize: effortHigh,
    });
    expect(await next.done).to.deep.equal({ ok: true });
    // Older blobs were SET by the first gateway, so only the end-stream shape and the client's checks apply here.
    assertEndStreamInvariants(next.frames);
    expect(reopened.violations()).to.deep.equal([]);

    const third = fake.messageRequests()[2]!;
    const added = addedAfter(second!, third);
    expect(added[0]).to.deep.equal({ role: "assistant", content: [{ type: "text", text: FIRST_ANSWER }] });
    expect(added).to.have.length(2);
    expect(added[1]).to.have.property("role", "user");
    expect(JSON.stringify(added[1])).to.include("now rename main");
    expect(third.body.messages[1].content[0]).to.deep.equal({
      type: "thinking",
      thinking: THINKING,
      signature: SIGNATURE,
    });
    expect(again.stderrLines().join("\n")).not.to.include(API_KEY);
  });

  it("continues on anthropic a conversation whose tool round ran on openai-chat, without forging its reasoning", async () => {
    const openai = await startFakeOpenAI();
    try {
      const gw = await startGateway(await freshDir(), [
        {
          id: "byok-e2e-gpt",
          provider: "openai-chat",
          baseUrl: openai.baseUrl,
          apiKey: "sk-e2e-chat",
          model: "gpt-e2e",
        },
      ]);
      const workspace = createWorkspace({ "src/app.ts": FILE });
      const client = new CursorClient(gw.url, { workspace });
      const conversationId = `conv-switch-${randomUUID()}`;
      openai.enqueue(
        {
          reasoning: "chat-only reasoning",
          text: "Let me look.",
          toolCalls: [{ id: "call_read_app", name: "Read", args: { path: "src/app.ts" } }],
        },
        { text: FIRST_ANSWER },
      );
      const first = client.startRun({ conversationId, modelId: "byok-e2e-gpt", text: "what does src/app.ts do?" });
      expect(await first.done).to.deep.equal({ ok: true });
      expect(openai.requests[1]!.body.messages[2].reasoning_content).to.equal("chat-only reasoning");

      fake.enqueue({
        blocks: [
          { type: "thinking", thinking: "Now rename.", signature: SIGNATURE },
          { type: "text", text: SECOND_ANSWER },
        ],
      });
      const before = fake.messageRequests().length;
      const second = client.startRun({
        conversationId,
        modelId: MODEL_ID,
        text: "now rename main",
        checkpoint: first.lastCheckpoint()!,
        customize: effortHigh,
      });
      expect(await second.done).to.deep.equal({ ok: true });
      const request = fake.messageRequests()[before]!;
      expect(withoutBreakpoints(request.body.messages.slice(0, 4))).to.deep.equal([
        { role: "user", content: openai.requests[0]!.body.messages[1].content },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me look." },
            { type: "tool_use", id: "call_read_app", name: "Read", input: { path: "src/app.ts" } },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_read_app", content: FILE }] },
        { role: "assistant", content: [{ type: "text", text: FIRST_ANSWER }] },
      ]);
      expect(request.body.messages).to.have.length(5);
      expect(JSON.stringify(request.body)).not.to.include("chat-only reasoning");
      // A new user turn: thinking is on, because no open tool loop needs a thinking block from the other endpoint.
      expect(request.body.thinking).to.deep.equal({ type: "enabled", budget_tokens: 16384 });
    } finally {
      await openai.close();
    }
  });

  it("routes a run that is not configured to the Messages API by its own sk-ant- key and base URL", async () => {
    const gw = await startGateway(await freshDir());
    const client = new CursorClient(gw.url);
    fake.enqueue({ blocks: [{ type: "text", text: "Hello from Claude." }] });
    const key = "sk-ant-own-key-77e1";
    const before = fake.messageRequests().length;
    const run = client.startRun({
      conversationId: `conv-anthropic-${randomUUID()}`,
      modelId: "claude-own",
      text: "hi",
      credentials: { apiKey: key, baseUrl: fake.baseUrl },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    expect(
      updates(run, "textDelta")
        .map((t) => t.text)
        .join(""),
    ).to.equal("Hello from Claude.");
    const request = fake.messageRequests()[before]!;
    expect(request.headers["x-api-key"]).to.equal(key);
    expect(request.body.model).to.equal("claude-own");
    expect(request.body).not.to.have.property("thinking");
  });
});
