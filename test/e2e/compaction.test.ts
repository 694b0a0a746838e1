// Summaries and automatic compaction over the wire (docs/protocol/cursor-run.md §8.10): a conversation driven past a
// small configured contextWindow is compacted once, continues with a request under the window with every tool call
// paired with its result, and stays prefix-stable afterwards; summarize_action produces the three summary updates;
// a failing summary call ends the run with the provider's error.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import {
  type AgentRunRequest,
  ConversationActionSchema,
  type ConversationStateStructure,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { ErrorDetails_Error } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { loadPromptAssets } from "../../prompt/assets.js";
import { estimateTokens } from "../../cursor/token-breakdown.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient, type RunHandle } from "../support/cursor-client.js";
import { type FakeOpenAI, type RecordedChatRequest, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants, frameKinds } from "../support/observed-frames.js";
import { updates } from "./tools-kit.js";

const MODEL = "gpt-small-window";
const agent = loadPromptAssets().modes.get("agent")!;
const compaction = loadPromptAssets().modes.get("compaction")!;
/** What every agent request carries besides the conversation, by the gateway's own estimate. */
const FIXED = estimateTokens(agent.systemPrompt) + estimateTokens(JSON.stringify(agent.tools));
/** Room for about 1500 tokens of conversation under the threshold (85 % of the window, no output limit set). */
const CONTEXT_WINDOW = Math.ceil((FIXED + 1500) / 0.85);
const FILE = Array.from({ length: 25 }, (_, i) => `line ${i}: ${"lorem ipsum dolor sit amet ".repeat(3)}`).join("\n");
const SUMMARY = "The user asked to read three files; all three were read. Nothing else is open.";

/** The gateway's estimate of a recorded Chat request (system, tools and messages as sent). */
const requestTokens = (r: RecordedChatRequest): number =>
  estimateTokens(JSON.stringify(r.body.messages)) + estimateTokens(JSON.stringify(r.body.tools ?? []));
const isSummaryCall = (r: RecordedChatRequest): boolean => r.body.messages[0].content === compaction.systemPrompt;

/** Every tool call of a request has its result right after it, and every result its call. */
function unpairedToolCalls(r: RecordedChatRequest): string[] {
  const problems: string[] = [];
  const messages = r.body.messages as Array<{
    role: string;
    tool_calls?: Array<{ id: string }>;
    tool_call_id?: string;
  }>;
  messages.forEach((m, i) => {
    if (m.role === "tool" && !messages.slice(0, i).some((p) => p.tool_calls?.some((c) => c.id === m.tool_call_id)))
      problems.push(`result ${m.tool_call_id} without its call`);
    for (const c of m.tool_calls ?? [])
      if (!messages.slice(i + 1).some((n) => n.role === "tool" && n.tool_call_id === c.id))
        problems.push(`call ${c.id} without its result`);
  });
  return problems;
}

const readRound = (n: number) => ({
  text: `Reading file ${n}.`,
  toolCalls: [{ id: `call_read_${n}`, name: "Read", args: { path: `f${n}.txt` } }],
});

describe("e2e: summaries and automatic compaction", function () {
  this.timeout(60_000);
  let fake: FakeOpenAI;
  let gw: GatewayProcess;
  let dataDir: string;
  let seq = 0;
  const workspace = createWorkspace({ "f1.txt": FILE, "f2.txt": FILE, "f3.txt": FILE });

  before(async function () {
    this.timeout(30_000);
    fake = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-compaction-"));
    const model = { id: MODEL, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: "sk-compaction" };
    gw = await startGatewayProcess({
      dataDir,
      config: { models: [{ ...model, model: "small", contextWindow: CONTEXT_WINDOW }] },
    });
  });
  after(async () => {
    await killAllGateways();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const run = (
    client: CursorClient,
    conversationId: string,
    opts: { text?: string; checkpoint?: ConversationStateStructure; summarize?: boolean },
  ): RunHandle =>
    client.startRun({
      conversationId,
      modelId: MODEL,
      text: opts.text ?? "",
      ...(opts.checkpoint ? { checkpoint: opts.checkpoint } : {}),
      ...(opts.summarize
        ? {
            customize: (r: AgentRunRequest) =>
              void (r.action = create(ConversationActionSchema, { action: { case: "summarizeAction", value: {} } })),
          }
        : {}),
    });

  it("compacts once when a turn crosses the window, keeps the last round whole, and stays prefix-stable after", async () => {
    const from = fake.requests.length;
    fake.enqueue(readRound(1), readRound(2), readRound(3), { text: SUMMARY }, { text: "All three are read." });
    const client = new CursorClient(gw.url, { workspace });
    const conversationId = `compaction-${process.pid}-${++seq}`;
    const first = run(client, conversationId, { text: "read f1.txt, f2.txt and f3.txt" });
    expect(await first.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(first.frames);
    expect(client.violations()).to.deep.equal([]);

    const requests = fake.requests.slice(from);
    expect(requests.map(isSummaryCall)).to.deep.equal([false, false, false, true, false]);
    const [r0, r1, r2, summaryCall, after] = requests as [RecordedChatRequest, ...RecordedChatRequest[]];
    // Before the crossing every request extends the previous one.
    expect(r1!.body.messages.slice(0, r0.body.messages.length)).to.deep.equal(r0.body.messages);
    expect(r2!.body.messages.slice(0, r1!.body.messages.length)).to.deep.equal(r1!.body.messages);
    // The threshold is crossed by the request after the third round: it is summarized instead of sent.
    expect(summaryCall!.body.tools, "the summary call offers no tools").to.equal(undefined);
    // The summary covers everything before the last round; the last round stays verbatim.
    expect(summaryCall!.body.messages.slice(1, -1)).to.deep.equal(r2!.body.messages.slice(1));
    const afterMessages = after!.body.messages as Array<{ role: string; content: string; tool_call_id?: string }>;
    expect(afterMessages[1]!.content).to.include(SUMMARY);
    expect(afterMessages.slice(2).map((m) => m.role)).to.deep.equal(["assistant", "tool"]);
    expect(afterMessages[3]!.tool_call_id).to.equal("call_read_3");
    expect(requestTokens(after!), "the request after the compaction fits the window").to.be.below(CONTEXT_WINDOW);
    expect(requestTokens(after!)).to.be.below(requestTokens(r2!));
    for (const r of requests) expect(unpairedToolCalls(r), "every tool call paired with its result").to.deep.equal([]);

    // summary_started → summary → summary_completed, once, before the next answer streams.
    const kinds = frameKinds(first.frames).filter((k) => k.startsWith("summary") || k === "text_delta");
    expect(kinds.filter((k) => k.startsWith("summary"))).to.deep.equal([
      "summary_started",
      "summary",
      "summary_completed",
    ]);
    expect(kinds.slice(kinds.indexOf("summary_completed"))).to.deep.equal(["summary_completed", "text_delta"]);
    expect(updates(first, "summary").map((u) => u.summary)).to.deep.equal([SUMMARY]);
    const checkpoint = first.lastCheckpoint()!;
    expect(checkpoint.selfSummaryCount).to.equal(1);
    expect(checkpoint.summaryArchives).to.have.length(1);
    expect(client.blobs.has(Buffer.from(checkpoint.summary!).toString("hex")), "the summary blob was SET").to.equal(
      true,
    );
    expect(checkpoint.rootPromptMessagesJson, "system, summary, last round, answer").to.have.length(5);
    expect(checkpoint.turns).to.have.length(1);
    const breakdown = checkpoint.tokenDetails!.breakdown!.categories.find((c) => c.id === "summarized_conversation");
    expect(breakdown!.characterCount).to.be.greaterThan(SUMMARY.length);

    // The next turn is under the threshold: no second compaction, and its request extends the compacted one.
    fake.enqueue({ text: "Yes." });
    const second = run(client, conversationId, { text: "anything else?", checkpoint });
    expect(await second.done).to.deep.equal({ ok: true });
    const next = fake.requests.at(-1)!;
    expect(isSummaryCall(next)).to.equal(false);
    expect(fake.requests.slice(from).filter(isSummaryCall)).to.have.length(1);
    expect(next.body.messages.slice(0, afterMessages.length)).to.deep.equal(afterMessages);
    expect(next.body.messages[afterMessages.length]).to.deep.include({
      role: "assistant",
      content: "All three are read.",
    });
    expect(frameKinds(second.frames).filter((k) => k.startsWith("summary"))).to.deep.equal([]);
  });

  it("summarize_action summarizes the whole history: summary_started → summary → summary_completed, then turn_ended", async () => {
    const client = new CursorClient(gw.url, { workspace });
    const conversationId = `compaction-${process.pid}-${++seq}`;
    fake.enqueue({ text: "Hello there." });
    const first = run(client, conversationId, { text: "hi" });
    expect(await first.done).to.deep.equal({ ok: true });
    const from = fake.requests.length;
    fake.enqueue({ text: "We greeted each other." });
    const summarize = run(client, conversationId, { summarize: true, checkpoint: first.lastCheckpoint()! });
    expect(await summarize.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(summarize.frames);
    expect(client.violations()).to.deep.equal([]);
    const summaryCall = fake.requests[from]!;
    expect(isSummaryCall(summaryCall)).to.equal(true);
    expect(summaryCall.body.messages.slice(1, -1)).to.deep.equal(
      fake.requests[from - 1]!.body.messages.slice(1).concat([{ role: "assistant", content: "Hello there." }]),
    );
    const kinds = frameKinds(summarize.frames).filter((k) => k !== "kv_set");
    expect(kinds).to.deep.equal([
      "summary_started",
      "summary",
      "checkpoint",
      "summary_completed",
      "turn_ended",
      "checkpoint",
      "checkpoint",
      "checkpoint",
      "end:ok",
    ]);
    expect(updates(summarize, "summary").map((u) => u.summary)).to.deep.equal(["We greeted each other."]);
    const checkpoint = summarize.lastCheckpoint()!;
    expect(checkpoint.selfSummaryCount).to.equal(1);
    expect(checkpoint.turns, "the turns the user sees are kept").to.deep.equal(first.lastCheckpoint()!.turns);
    expect(checkpoint.rootPromptMessagesJson, "system and summary").to.have.length(2);

    fake.enqueue({ text: "Sure." });
    const after = run(client, conversationId, { text: "go on", checkpoint });
    expect(await after.done).to.deep.equal({ ok: true });
    const messages = fake.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).to.deep.equal(["system", "user", "user"]);
    expect(messages[1]!.content).to.include("We greeted each other.");
  });

  it("a failing summary call ends the run with the provider's error", async () => {
    fake.enqueue(readRound(1), readRound(2), readRound(3), { status: 500, body: '{"error":{"message":"overloaded"}}' });
    const client = new CursorClient(gw.url, { workspace });
    const failed = run(client, `compaction-${process.pid}-${++seq}`, { text: "read f1.txt, f2.txt and f3.txt" });
    const end = await failed.done;
    expect(end).to.include({ ok: false, code: "unavailable" });
    expect(end.ok === false && end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    assertEndStreamInvariants(failed.frames);
    expect(frameKinds(failed.frames).filter((k) => k.startsWith("summary"))).to.deep.equal(["summary_started"]);
    expect(fake.pending()).to.equal(0);
  });
});
