// Wire-level closed loop over the OpenAI Responses API (docs/protocol/cursor-run.md §7.3, §8.1, §8.5): a configured
// model with
// `provider: openai-responses` answers with reasoning (encrypted) + a tool call, the Cursor client executes it, the
// second call carries the reasoning item with the capsule of its output_item.done plus the string result, and the
// final answer ends the run. After a restart the conversation continues prefix-stable. The fake provider rejects,
// as the real one does, a capsule that is not the finished one and a call without its output. A conversation that
// moves between an openai-chat and an openai-responses model keeps every request valid for its endpoint.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { startFakeOpenAIResponses, type FakeOpenAIResponses } from "../support/fake-openai-responses.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import { updates } from "./tools-kit.js";

const RESPONSES_MODEL = "byok-e2e-responses";
const CHAT_MODEL = "byok-e2e-chat";
const API_KEY = "sk-e2e-responses-93b1f07a";
const CAPSULE_1 = "gAAAAB-e2e-capsule-one";
const CAPSULE_2 = "gAAAAB-e2e-capsule-two";
const FILE = "export function main() {\n  console.log('hi');\n}\n";
const FIRST_ANSWER = "src/app.ts exports main(), which prints a greeting.";
const SECOND_ANSWER = "Rename it to start() and update the one caller.";

const repeat = (kind: string, times: number): string[] => Array<string>(times).fill(kind);
const checkpointTail = ["turn_ended", "checkpoint", "checkpoint", "checkpoint", "end:ok"];

type Item = Record<string, unknown>;
interface ResponsesBody {
  instructions: string;
  input: Item[];
  tools: Item[];
}

describe("e2e: OpenAI Responses closed loop with reasoning replay and restart", function () {
  this.timeout(45_000);

  let responses: FakeOpenAIResponses;
  let chat: FakeOpenAI;
  const dirs: string[] = [];

  before(async () => {
    responses = await startFakeOpenAIResponses();
    chat = await startFakeOpenAI();
  });
  after(async () => {
    await killAllGateways();
    await Promise.all([responses?.close(), chat?.close()]);
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  afterEach(() => {
    expect(responses.pending(), "every scripted Responses turn was consumed").to.equal(0);
    expect(chat.pending(), "every scripted Chat turn was consumed").to.equal(0);
  });

  const freshDir = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), "byok-e2e-responses-"));
    dirs.push(dir);
    return dir;
  };
  const startGateway = (dataDir: string) =>
    startGatewayProcess({
      dataDir,
      config: {
        models: [
          {
            id: RESPONSES_MODEL,
            provider: "openai-responses",
            baseUrl: responses.baseUrl,
            apiKey: API_KEY,
            model: "gpt-5-e2e",
          },
          { id: CHAT_MODEL, provider: "openai-chat", baseUrl: chat.baseUrl, apiKey: API_KEY, model: "deepseek-e2e" },
        ],
      },
    });
  const bodiesSince = (count: number) => responses.requests.slice(count).map((r) => r.body as ResponsesBody);

  it("replays the finished reasoning item with the tool result, then continues prefix-stable after a restart", async () => {
    const dataDir = await freshDir();
    const gw = await startGateway(dataDir);
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "src/app.ts": FILE }) });
    const conversationId = `conv-responses-${randomUUID()}`;
    const requestsBefore = responses.requests.length;
    const itemsBefore = responses.sentItems.length;
    responses.enqueue(
      {
        reasoning: { id: "rs_e2e_1", summary: ["**Reading the file**", "It is short."], encryptedContent: CAPSULE_1 },
        text: "Let me look.",
        phase: "commentary",
        toolCalls: [{ callId: "call_read_app", name: "Read", args: { path: "src/app.ts" } }],
        usage: { input_tokens: 900, output_tokens: 40, output_tokens_details: { reasoning_tokens: 25 } },
        chunkSize: 5,
      },
      {
        reasoning: { id: "rs_e2e_2", summary: [], encryptedContent: CAPSULE_2 },
        text: FIRST_ANSWER,
        phase: "final_answer",
        usage: { input_tokens: 1000, output_tokens: 12 },
      },
    );
    const run = client.startRun({ conversationId, modelId: RESPONSES_MODEL, text: "what does src/app.ts do?" });
    expect(await run.done).to.deep.equal({ ok: true });
    // Deltas of one provider read go out as one frame: repeated deltas are collapsed, the texts checked joined.
    expect(run.kinds({ collapse: ["thinking_delta", "text_delta"] })).to.deep.equal([
      // two summary parts, the commentary, the Read call's start + 5 argument deltas, usage
      "thinking_delta",
      "thinking_completed",
      "text_delta",
      ...repeat("partial_tool_call", 6),
      "token_delta",
      ...repeat("kv_set", 6),
      "checkpoint",
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...repeat("kv_set", 4),
      "checkpoint",
      // the final answer: its reasoning item has no summary, so nothing to show but a capsule to replay
      "text_delta",
      "token_delta",
      "step_completed",
      ...repeat("kv_set", 3),
      ...checkpointTail,
    ]);
    expect(
      updates(run, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).to.equal("**Reading the file**\n\nIt is short.");
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);

    const [first, second] = bodiesSince(requestsBefore);
    expect(bodiesSince(requestsBefore)).to.have.length(2);
    expect(first!.instructions).to.be.a("string").and.not.equal("");
    expect(first!.tools.find((tool) => tool.name === "Read")).to.include({ type: "function", strict: false });
    expect(responses.requests[requestsBefore]!.body)
      .to.include({ store: false, stream: true })
      .and.not.have.property("previous_response_id");

    // Call 2 = call 1 + the first response's items exactly as output_item.done carried them + the string result.
    const [reasoning, commentary, functionCall] = responses.sentItems.slice(itemsBefore);
    expect(reasoning).to.include({ type: "reasoning", id: "rs_e2e_1", encrypted_content: CAPSULE_1 });
    expect(commentary).to.include({ type: "message", phase: "commentary" });
    expect(second!.input).to.deep.equal([
      ...first!.input,
      reasoning,
      commentary,
      functionCall,
      { type: "function_call_output", call_id: "call_read_app", output: FILE },
    ]);

    expect(await gw.stop("SIGKILL")).to.deep.equal({ code: null, signal: "SIGKILL" });
    expect(gw.stderrLines().join("\n")).not.to.include(API_KEY);

    // Restart on the same data dir; the client comes back with its checkpoint and blobs and asks a follow-up.
    const restarted = await startGateway(dataDir);
    const reopened = new CursorClient(restarted.url, { workspace: client.workspace });
    for (const data of client.blobs.values()) reopened.putBlob(data);
    responses.enqueue({ text: SECOND_ANSWER, phase: "final_answer" });
    const next = reopened.startRun({
      conversationId,
      modelId: RESPONSES_MODEL,
      text: "now rename main",
      checkpoint: run.lastCheckpoint()!,
    });
    expect(await next.done).to.deep.equal({ ok: true });
    expect(next.kinds()).to.deep.equal([
      "text_delta",
      "token_delta",
      "step_completed",
      ...repeat("kv_set", 5),
      ...checkpointTail,
    ]);
    assertEndStreamInvariants(next.frames);
    expect(reopened.violations()).to.deep.equal([]);

    // Call 3 = call 2 + the second response's items (reasoning with its finished capsule, final answer) + the new user
    // turn.
    const [third] = bodiesSince(requestsBefore + 2);
    const answerItems = responses.sentItems.slice(itemsBefore + 3, itemsBefore + 5);
    expect(answerItems.map((item) => item.type)).to.deep.equal(["reasoning", "message"]);
    expect(answerItems[0]).to.include({ encrypted_content: CAPSULE_2 });
    const prefix = [...second!.input, ...answerItems];
    expect(JSON.stringify(third!.input.slice(0, prefix.length))).to.equal(JSON.stringify(prefix));
    expect(third!.input).to.have.length(prefix.length + 1);
    expect(third!.input.at(-1)).to.include({ role: "user" });
    expect(String(third!.input.at(-1)!.content)).to.include("now rename main");
    expect(third!.instructions).to.equal(first!.instructions);
    expect(JSON.stringify(third!.tools)).to.equal(JSON.stringify(first!.tools));
    expect(restarted.stderrLines().join("\n")).not.to.include(API_KEY);
  });

  it("moves a conversation from an openai-chat model to openai-responses and back, each request valid for its endpoint", async () => {
    const gw = await startGateway(await freshDir());
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "src/app.ts": FILE }) });
    const conversationId = `conv-switch-${randomUUID()}`;

    chat.enqueue(
      {
        reasoning: "chat-only raw thinking",
        text: "Reading.",
        toolCalls: [{ id: "call_chat_read", name: "Read", args: { path: "src/app.ts" } }],
      },
      { text: FIRST_ANSWER },
    );
    const viaChat = client.startRun({ conversationId, modelId: CHAT_MODEL, text: "what does src/app.ts do?" });
    expect(await viaChat.done).to.deep.equal({ ok: true });

    const responsesBefore = responses.requests.length;
    const itemsBefore = responses.sentItems.length;
    responses.enqueue({
      reasoning: { id: "rs_switch", summary: ["**Thinking**"], encryptedContent: CAPSULE_1 },
      text: SECOND_ANSWER,
    });
    const viaResponses = client.startRun({
      conversationId,
      modelId: RESPONSES_MODEL,
      text: "now rename main",
      checkpoint: viaChat.lastCheckpoint()!,
    });
    expect(await viaResponses.done).to.deep.equal({ ok: true });

    // The Chat turn arrives as plain text and calls; its reasoning_content is never turned into a Responses item.
    const [switched] = bodiesSince(responsesBefore);
    const fromChat = switched!.input.filter(
      (item) => item.role === "assistant" || String(item.type).startsWith("function_call"),
    );
    expect(fromChat).to.deep.equal([
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Reading." }] },
      { type: "function_call", call_id: "call_chat_read", name: "Read", arguments: '{"path":"src/app.ts"}' },
      { type: "function_call_output", call_id: "call_chat_read", output: FILE },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: FIRST_ANSWER }] },
    ]);
    expect(switched!.input.filter((item) => item.type === "reasoning")).to.deep.equal([]);
    expect(JSON.stringify(switched)).to.not.include("chat-only raw thinking");

    // Back on Chat: the Responses turn is plain text there, its encrypted reasoning is not sent to another endpoint.
    chat.enqueue({ text: "Done." });
    const back = client.startRun({
      conversationId,
      modelId: CHAT_MODEL,
      text: "thanks",
      checkpoint: viaResponses.lastCheckpoint()!,
    });
    expect(await back.done).to.deep.equal({ ok: true });
    const chatBody = JSON.stringify(chat.requests.at(-1)!.body);
    expect(responses.sentItems[itemsBefore]).to.include({ encrypted_content: CAPSULE_1 });
    expect(chatBody).to.include(SECOND_ANSWER).and.not.include(CAPSULE_1);
    expect(gw.stderrLines().join("\n")).not.to.include(API_KEY);
  });
});
