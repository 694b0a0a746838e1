// Restart round trip of the derived conversation state (docs/protocol/cursor-run.md §8.9): the to-do list and the
// progress updates are a fold of the history, so after the gateway is killed and started on an empty data dir the
// next run folds the history it gets back from the client's checkpoint, and a merge continues the list it left.
import { fromBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConversationStateStructure, TodoItemSchema, TodoStatus } from "../../proto/gen/agent/v1/agent_pb.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants, blobHex } from "../support/observed-frames.js";

const MODEL_ID = "byok-e2e-local-state";

function todosOf(checkpoint: ConversationStateStructure, blobs: Map<string, Uint8Array>): string[] {
  return checkpoint.todos.map((id) => {
    const item = fromBinary(TodoItemSchema, blobs.get(blobHex(id))!);
    return `${item.id}:${TodoStatus[item.status]}`;
  });
}
const steps = (checkpoint: ConversationStateStructure) =>
  checkpoint.communicateUpdateHistory.map((h) => `${h.messageIndex}:${h.step}`);

describe("e2e: the to-do list and current step survive a gateway restart", function () {
  this.timeout(45_000);
  let fake: FakeOpenAI;
  const dirs: string[] = [];
  before(async () => (fake = await startFakeOpenAI()));
  after(async () => {
    await killAllGateways();
    await fake?.close();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  const startGateway = async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-local-state-"));
    dirs.push(dataDir);
    const model = { id: MODEL_ID, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: "sk-e2e", model: "gpt-e2e" };
    return startGatewayProcess({ dataDir, config: { models: [model] }, upstream: "http://127.0.0.1:9" });
  };

  it("after SIGKILL and a lost store, the next run folds the client's history and merges into its list", async () => {
    const conversationId = `conv-local-state-${randomUUID()}`;
    const gw1 = await startGateway();
    const client1 = new CursorClient(gw1.url, {});
    const plan = [
      { id: "read", content: "Read the loader", status: "in_progress" },
      { id: "fix", content: "Fix the port", status: "pending" },
    ];
    fake.enqueue(
      {
        text: "Planning.",
        toolCalls: [
          { id: "call_todo", name: "TodoWrite", args: { todos: plan, merge: false } },
          { id: "call_step", name: "UpdateCurrentStep", args: { current_step: "Reading the loader" } },
        ],
      },
      { text: "Read it." },
    );
    // A subagent's conversation: UpdateCurrentStep is a subagent tool (docs/protocol/cursor-run.md §13).
    const headers = { "x-parent-request-id": "req-parent", "x-parent-agent-tool-call-id": "call_task_parent" };
    const run1 = client1.startRun({ conversationId, modelId: MODEL_ID, text: "fix the port", headers });
    expect(await run1.done).to.deep.equal({ ok: true });
    const first = run1.lastCheckpoint()!;
    expect(todosOf(first, client1.blobs)).to.deep.equal(["read:IN_PROGRESS", "fix:PENDING"]);
    // Text step 1, TodoWrite 2, this call 3.
    expect(steps(first)).to.deep.equal(["3:Reading the loader"]);
    await gw1.stop("SIGKILL");

    const gw2 = await startGateway();
    const client2 = new CursorClient(gw2.url, {});
    for (const data of client1.blobs.values()) client2.putBlob(data);
    const update = [
      { id: "read", content: "Read the loader", status: "completed" },
      { id: "ship", content: "Ship it", status: "pending" },
    ];
    fake.enqueue(
      { text: "Next.", toolCalls: [{ id: "call_todo_2", name: "TodoWrite", args: { todos: update, merge: true } }] },
      { text: "Fixing now." },
    );
    const run2 = client2.startRun({ conversationId, modelId: MODEL_ID, text: "go on", checkpoint: first, headers });
    expect(await run2.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(run2.frames);
    expect(client2.violations()).to.deep.equal([]);
    expect(
      run2.kvLog.some((k) => k.case === "getBlobArgs"),
      "the history came back from the client",
    ).to.equal(true);

    const [staged, settled] = run2.checkpoints;
    expect(todosOf(staged!, client2.blobs), "folded from the fetched history").to.deep.equal([
      "read:IN_PROGRESS",
      "fix:PENDING",
    ]);
    expect(steps(staged!)).to.deep.equal(["3:Reading the loader"]);
    const merged = ["read:COMPLETED", "fix:PENDING", "ship:PENDING"];
    expect(todosOf(settled!, client2.blobs)).to.deep.equal(merged);
    expect(todosOf(run2.lastCheckpoint()!, client2.blobs)).to.deep.equal(merged);
    expect(steps(run2.lastCheckpoint()!)).to.deep.equal(["3:Reading the loader"]);
    // The unchanged item's blob was the client's already: it is referenced again, not SET again.
    const fixId = blobHex(first.todos[1]!);
    expect(blobHex(settled!.todos[1]!)).to.equal(fixId);
    const sets = run2.kvLog.filter((k) => k.case === "setBlobArgs").map((k) => k.blobId);
    expect(sets).to.not.include(fixId);
  });
});
