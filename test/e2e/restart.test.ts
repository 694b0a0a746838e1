// Restart (docs/protocol/cursor-run.md §6, §8.1, §10.2, §11; docs/protocol/README.md §6.3, §6.4): the gateway is
// stopped after a completed run and started again; the next run_request carries the client's last checkpoint and a new
// user message, and the conversation continues with its whole history, prefix-stable. With the store lost, every root
// blob the checkpoint references is fetched back from the client with get_blob_args and verified against its id.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConversationStateStructure } from "../../proto/gen/agent/v1/agent_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants, blobHex } from "../support/observed-frames.js";

const MODEL_ID = "byok-e2e-restart";
const API_KEY = "sk-e2e-restart-47d2a9c1e0";
const DEAD_UPSTREAM = "http://127.0.0.1:9";
const FIRST_ANSWER = "src/app.ts exports main(), which prints a greeting.";
const SECOND_ANSWER = "Rename it to start() and update the one caller.";

const repeat = (kind: string, times: number): string[] => Array<string>(times).fill(kind);
const checkpointTail = ["turn_ended", "checkpoint", "checkpoint", "checkpoint", "end:ok"];

interface ChatMessage {
  role: string;
  content: unknown;
}
interface ChatBody {
  messages: ChatMessage[];
  tools: unknown[];
}

describe("e2e: restart continues a conversation from the client's checkpoint", function () {
  // Each test starts and stops gateway processes twice: on a loaded two-core machine that alone takes ~20 s.
  this.timeout(45_000);

  let fake: FakeOpenAI;
  const dirs: string[] = [];

  before(async () => (fake = await startFakeOpenAI()));
  after(async () => {
    await killAllGateways();
    await fake?.close();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  afterEach(() => expect(fake.pending(), "every scripted provider turn was consumed").to.equal(0));

  const freshDir = async (): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), "byok-e2e-restart-"));
    dirs.push(dir);
    return dir;
  };
  const startGateway = (dataDir: string) =>
    startGatewayProcess({
      dataDir,
      config: {
        models: [{ id: MODEL_ID, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: API_KEY, model: "gpt-e2e" }],
      },
      upstream: DEAD_UPSTREAM,
    });

  /** Run 1 with one Read round, then the gateway is stopped with `signal`. */
  async function firstRun(dataDir: string, signal: NodeJS.Signals) {
    const gw = await startGateway(dataDir);
    const client = new CursorClient(gw.url, {
      workspace: createWorkspace({ "src/app.ts": "export function main() {\n  console.log('hi');\n}\n" }),
    });
    const conversationId = `conv-restart-${randomUUID()}`;
    const requestsBefore = fake.requests.length;
    fake.enqueue(
      { text: "Let me look.", toolCalls: [{ id: "call_read_app", name: "Read", args: { path: "src/app.ts" } }] },
      { text: FIRST_ANSWER, usage: { prompt_tokens: 900, completion_tokens: 12 } },
    );
    const run = client.startRun({ conversationId, modelId: MODEL_ID, text: "what does src/app.ts do?" });
    expect(await run.done).to.deep.equal({ ok: true });
    expect(run.kinds()).to.deep.equal([
      "text_delta",
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      // staged (system + runtime user roots, user message, text step, turn): the batch is recoverable before it runs
      ...repeat("kv_set", 5),
      "checkpoint",
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      // settled (assistant + tool roots, tool step, turn): call and result are history before the next model call
      ...repeat("kv_set", 4),
      "checkpoint",
      "text_delta",
      "token_delta",
      "step_completed",
      ...repeat("kv_set", 3),
      ...checkpointTail, // final: text step, turn, assistant root
    ]);
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
    const status = await gw.stop(signal);
    expect(status).to.deep.equal(signal === "SIGKILL" ? { code: null, signal: "SIGKILL" } : { code: 0, signal: null });
    expect(gw.stderrLines().join("\n")).not.to.include(API_KEY);

    const requests = fake.requests.slice(requestsBefore).map((r) => r.body as ChatBody);
    expect(requests).to.have.length(2);
    return {
      conversationId,
      checkpoint: run.lastCheckpoint()!,
      blobs: client.blobs,
      workspace: client.workspace,
      requests,
    };
  }

  /** The client after an editor restart: same workspace, same blob store (everything it had acknowledged). */
  function reopenedClient(url: string, first: Awaited<ReturnType<typeof firstRun>>): CursorClient {
    const client = new CursorClient(url, { workspace: first.workspace });
    for (const data of first.blobs.values()) client.putBlob(data);
    return client;
  }

  /** Request N+1 starts with request N plus the answer to it; one runtime user message per run
   * (docs/protocol/cursor-run.md §8.1, §8.6). */
  function expectPrefixStable(first: ChatBody[], second: ChatBody): void {
    const last = first[first.length - 1]!;
    const prefix = [...last.messages, { role: "assistant", content: FIRST_ANSWER }];
    expect(JSON.stringify(second.messages.slice(0, prefix.length))).to.equal(JSON.stringify(prefix));
    expect(second.messages).to.have.length(prefix.length + 1);
    const newest = second.messages[second.messages.length - 1]!;
    expect(newest.role).to.equal("user");
    expect(String(newest.content)).to.include("rename main");
    expect(second.messages[0]).to.deep.equal(first[0]!.messages[0]); // the system prompt, byte for byte
    expect(second.messages[0]!.role).to.equal("system");
    expect(JSON.stringify(second.tools)).to.equal(JSON.stringify(first[0]!.tools));
    const users = (body: ChatBody) => body.messages.filter((m) => m.role === "user").length;
    expect(first.map(users)).to.deep.equal([1, 1]);
    expect(users(second)).to.equal(2);
  }

  const rootIds = (checkpoint: ConversationStateStructure): string[] => checkpoint.rootPromptMessagesJson.map(blobHex);

  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`after ${signal}, the same data dir continues the conversation prefix-stable without fetching blobs`, async () => {
      const dataDir = await freshDir();
      const first = await firstRun(dataDir, signal);

      const gw = await startGateway(dataDir);
      const client = reopenedClient(gw.url, first);
      fake.enqueue({ text: SECOND_ANSWER });
      const run = client.startRun({
        conversationId: first.conversationId,
        modelId: MODEL_ID,
        text: "now rename main",
        checkpoint: first.checkpoint,
      });
      expect(await run.done).to.deep.equal({ ok: true });
      // New blobs only: runtime user root, user message, assistant root, assistant step, turn. Nothing is fetched.
      expect(run.kinds()).to.deep.equal([
        "text_delta",
        "token_delta",
        "step_completed",
        ...repeat("kv_set", 5),
        ...checkpointTail,
      ]);
      assertEndStreamInvariants(run.frames);
      expect(client.violations()).to.deep.equal([]);

      expectPrefixStable(first.requests, fake.requests.at(-1)!.body as ChatBody);
      // The new checkpoint extends the old history: the old roots stay, in order, then this run's three.
      const roots = rootIds(run.lastCheckpoint()!);
      expect(roots.slice(0, first.checkpoint.rootPromptMessagesJson.length)).to.deep.equal(rootIds(first.checkpoint));
      expect(roots).to.have.length(first.checkpoint.rootPromptMessagesJson.length + 2);
      expect(run.lastCheckpoint()!.turns).to.have.length(first.checkpoint.turns.length + 1);
      expect(gw.stderrLines().join("\n")).not.to.include(API_KEY);
    });
  }

  it("with the store lost, fetches every root blob from the client, verifies it, and continues prefix-stable", async () => {
    const first = await firstRun(await freshDir(), "SIGKILL");

    const gw = await startGateway(await freshDir());
    const client = reopenedClient(gw.url, first);
    fake.enqueue({ text: SECOND_ANSWER });
    const run = client.startRun({
      conversationId: first.conversationId,
      modelId: MODEL_ID,
      text: "now rename main",
      checkpoint: first.checkpoint,
    });
    expect(await run.done).to.deep.equal({ ok: true });

    const roots = rootIds(first.checkpoint);
    expect(run.kinds()).to.deep.equal([
      ...repeat("kv_get", roots.length),
      "text_delta",
      "token_delta",
      "step_completed",
      ...repeat("kv_set", 5),
      ...checkpointTail,
    ]);
    const gets = run.kvLog.filter((k) => k.case === "getBlobArgs").map((k) => k.blobId);
    expect([...gets].sort()).to.deep.equal([...new Set(roots)].sort());
    const answered = run.appends.filter(
      (a) => a.message.message.case === "kvClientMessage" && a.message.message.value.message.case === "getBlobResult",
    );
    expect(answered).to.have.length(roots.length);
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);

    expectPrefixStable(first.requests, fake.requests.at(-1)!.body as ChatBody);
  });

  it("with the store lost, a fetched blob whose bytes do not match its id ends the run invalid_argument", async () => {
    const first = await firstRun(await freshDir(), "SIGKILL");

    const gw = await startGateway(await freshDir());
    const client = reopenedClient(gw.url, first);
    const roots = rootIds(first.checkpoint);
    const forged = roots[1]!; // the first run's user message
    client.blobs.set(forged, new TextEncoder().encode(JSON.stringify({ role: "user", content: "forged history" })));
    const requestsBefore = fake.requests.length;
    const run = client.startRun({
      conversationId: first.conversationId,
      modelId: MODEL_ID,
      text: "now rename main",
      checkpoint: first.checkpoint,
    });
    const end = await run.done;

    expect(end.ok).to.equal(false);
    expect(run.kinds()).to.deep.equal([...repeat("kv_get", roots.length), "end:invalid_argument"]);
    expect(end.ok ? "" : end.message).to.match(/get_blob_result/);
    expect(fake.requests.length, "no provider call is made on unverified history").to.equal(requestsBefore);
    expect(run.checkpoints).to.deep.equal([]);
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
  });
});
