// Wire-level e2e: the local tools TodoWrite and UpdateCurrentStep (docs/protocol/cursor-tools.md §5.12). The gateway
// answers them itself: tool_call_started and tool_call_completed back to back, no Exec, no interaction; the to-do
// list and the progress updates reach the settled checkpoint as a fold of the results (docs/protocol/cursor-run.md
// §8.9).
import { fromBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { type ConversationStateStructure, TodoItemSchema, TodoStatus } from "../../proto/gen/agent/v1/agent_pb.js";
import type { CursorClient } from "../support/cursor-client.js";
import { blobHex } from "../support/observed-frames.js";
import { assertCleanSuccess, assertPrefix, execs, updates, useToolsRig, TURN_ENDINGS } from "./tools-kit.js";

const todos = [
  { id: "read", content: "Read the config loader", status: "in_progress" },
  { id: "fix", content: "Fix the default port", status: "pending" },
];

/** The frames of a round of one local call whose response had `lead` (that many `steps`) before it, up to
 * tool_call_completed. */
const localRound = (lead: string[], steps = lead.length) => [
  ...lead,
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(steps + 4).fill("kv_set"), // staged: system, runtime user, user message, steps, turn
  "checkpoint",
  "tool_call_started",
  "tool_call_completed",
];

/** After the round: the settled checkpoint (`extra` more blobs than usual), the answer, the final sequence. */
const settledThenAnswer = (extra: number) => [
  ...Array<string>(4 + extra).fill("kv_set"),
  "checkpoint",
  "text_delta",
  "token_delta",
  "step_completed",
  ...Array<string>(3).fill("kv_set"),
  ...TURN_ENDINGS,
];

/** The checkpoint's to-do list, read from the client's blob store the way Cursor reads it. */
function todosOf(checkpoint: ConversationStateStructure, client: CursorClient): string[] {
  return checkpoint.todos.map((id) => {
    const data = client.blobs.get(blobHex(id));
    if (!data) expect.fail(`to-do blob ${blobHex(id)} is not in the client's store`);
    const item = fromBinary(TodoItemSchema, data);
    return `${item.id}:${TodoStatus[item.status]}:${item.content}`;
  });
}

/** UpdateCurrentStep is a subagent's tool: these runs carry a parent's headers (docs/protocol/cursor-run.md §13). */
const AS_SUBAGENT = { "x-parent-request-id": "req-parent", "x-parent-agent-tool-call-id": "call_task_parent" };

describe("e2e tools: local tools answered by the gateway (TodoWrite, UpdateCurrentStep)", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-local");

  it("TodoWrite completes at once with its typed result and puts the list in the settled checkpoint", async () => {
    const fake = await rig.fake(
      { text: "Planning.", toolCalls: [{ id: "call_todo_1", name: "TodoWrite", args: { todos, merge: false } }] },
      { text: "On it." },
    );
    const { client, run } = rig.start(fake, { text: "fix the port" });
    await run.done;

    expect(run.kinds()).to.deep.equal([...localRound(["text_delta"]), ...settledThenAnswer(2)]);
    assertCleanSuccess(run, client);
    expect(execs(run)).to.deep.equal([]);
    const [completed] = updates(run, "toolCallCompleted");
    const card = completed!.toolCall!.tool;
    if (card.case !== "updateTodosToolCall") expect.fail(`expected an update_todos card, got ${card.case}`);
    const result = card.value.result?.result;
    if (result?.case !== "success") expect.fail("expected UpdateTodosSuccess");
    expect(result.value.totalCount).to.equal(2);
    expect(result.value.wasMerge).to.equal(false);
    expect(result.value.todos.map((t) => t.id)).to.deep.equal(["read", "fix"]);
    const { startedAtMs, completedAtMs } = completed!.toolCall!;
    expect(Number(completedAtMs)).to.be.greaterThanOrEqual(Number(startedAtMs)).and.greaterThan(0);

    // The answer is the turn's third step (text, the call, the answer): its step_completed precedes the final blobs.
    const [step] = updates(run, "stepCompleted");
    expect(step!.stepId).to.equal(3n);
    expect(step!.stepDurationMs).to.be.a("bigint");

    const [staged, settled] = run.checkpoints;
    expect(staged!.todos, "the staged checkpoint comes before the call").to.deep.equal([]);
    const list = ["read:IN_PROGRESS:Read the config loader", "fix:PENDING:Fix the default port"];
    expect(todosOf(settled!, client)).to.deep.equal(list);
    expect(todosOf(run.lastCheckpoint()!, client)).to.deep.equal(list);

    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.equal({
      role: "tool",
      tool_call_id: "call_todo_1",
      content: JSON.stringify({ merge: false, todos }),
    });
  });

  it("TodoWrite with arguments it cannot take is an error result, and the list stays as it was", async () => {
    const fake = await rig.fake();
    const args = { todos: [todos[0]], merge: false };
    fake.enqueue({ text: "Planning.", toolCalls: [{ id: "call_todo_2", name: "TodoWrite", args }] }, { text: "Ok." });
    const { client, run } = rig.start(fake, { text: "fix the port" });
    await run.done;

    expect(run.kinds()).to.deep.equal([...localRound(["text_delta"]), ...settledThenAnswer(0)]);
    assertCleanSuccess(run, client);
    const card = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    expect(card.case).to.equal("updateTodosToolCall");
    expect(card.value?.result).to.equal(undefined);
    expect(run.lastCheckpoint()!.todos).to.deep.equal([]);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ role: "tool", tool_call_id: "call_todo_2" });
    expect(String((added[1] as { content: string }).content)).to.include('"todos" needs at least 2 items');
  });

  it("UpdateCurrentStep numbers its step after the thinking and the text (3) and records it in the checkpoint", async () => {
    const fake = await rig.fake();
    const args = { current_step: "Reading the config loader" };
    fake.enqueue(
      {
        reasoning: "Start with the loader.",
        text: "Looking.",
        toolCalls: [{ id: "call_step_1", name: "UpdateCurrentStep", args }],
      },
      { text: "Done reading." },
    );
    const { client, run } = rig.start(fake, { text: "fix the port", headers: AS_SUBAGENT });
    await run.done;

    const lead = ["thinking_delta", "thinking_completed", "text_delta"];
    expect(run.kinds()).to.deep.equal([...localRound(lead, 2), ...settledThenAnswer(0)]);
    assertCleanSuccess(run, client);
    const card = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    if (card.case !== "communicateUpdateToolCall") expect.fail(`expected a communicate_update card, got ${card.case}`);
    const result = card.value.result?.result;
    if (result?.case !== "success") expect.fail("expected CommunicateUpdateSuccess");
    expect(result.value).to.include({ currentStep: "Reading the config loader", messageIndex: 3 });

    const settled = run.checkpoints[1]!;
    expect(settled.communicateUpdateHistory.map((h) => [h.step, h.messageIndex])).to.deep.equal([
      ["Reading the config loader", 3],
    ]);
    // …and, as a subagent's progress, under its parent's Task call id.
    const filed = settled.communicateUpdateStatesByParentToolCallId.call_task_parent!;
    expect(filed.history.map((h) => [h.step, h.messageIndex])).to.deep.equal([["Reading the config loader", 3]]);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({
      role: "tool",
      content: '{"current_step":"Reading the config loader","message_index":3}',
    });
  });

  it("UpdateCurrentStep with an empty step is an error result and records nothing", async () => {
    const fake = await rig.fake();
    const args = { current_step: "" };
    fake.enqueue({ text: "Hm.", toolCalls: [{ id: "call_step_2", name: "UpdateCurrentStep", args }] }, { text: "Ok." });
    const { client, run } = rig.start(fake, { text: "fix the port", headers: AS_SUBAGENT });
    await run.done;

    expect(run.kinds()).to.deep.equal([...localRound(["text_delta"]), ...settledThenAnswer(0)]);
    assertCleanSuccess(run, client);
    expect(run.lastCheckpoint()!.communicateUpdateHistory).to.deep.equal([]);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(String((added[1] as { content: string }).content)).to.include('"current_step" must not be empty');
  });
});
