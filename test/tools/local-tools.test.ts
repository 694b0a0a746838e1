// The local tools TodoWrite and UpdateCurrentStep (docs/protocol/cursor-tools.md §5.12): answered by the gateway at
// once, no Exec, with a typed success card and a canonical JSON result the history fold reads back.
import { expect } from "chai";
import { TodoStatus } from "../../proto/gen/agent/v1/agent_pb.js";
import { toolDriver } from "../../cursor/tools/registry.js";
import type { ToolContext } from "../../cursor/tools/types.js";
import type { TodoEntry } from "../../cursor/derived-state.js";
import {
  branch,
  CALL_ID,
  clientMessage,
  completionOf,
  ctx,
  invocation,
  protocolErrorOf,
  startedCall,
} from "./helpers.js";

const todoWrite = toolDriver("TodoWrite")!;
const updateStep = toolDriver("UpdateCurrentStep")!;
const two = [
  { id: "a", content: "Read the loader", status: "in_progress" },
  { id: "b", content: "Fix the bug", status: "pending" },
];
const inTurn = (steps: number, todos?: TodoEntry[]): ToolContext => ({
  ...ctx,
  turn: { steps, ...(todos ? { todos } : {}) },
});

describe("TodoWrite driver", () => {
  it("completes at once with UpdateTodosSuccess and the update as canonical JSON", () => {
    const call = invocation("TodoWrite", { todos: two, merge: false });
    const card = branch(startedCall(todoWrite.started(call, ctx)), "updateTodosToolCall");
    expect(card.args?.todos.map((t) => t.id)).to.deep.equal(["a", "b"]);
    const done = completionOf(todoWrite.begin(call, inTurn(0)));
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal(`{"merge":false,"todos":${JSON.stringify(two)}}`);
    const result = branch(done.toolCall, "updateTodosToolCall").result?.result;
    if (result?.case !== "success") expect.fail("expected success");
    expect(result.value.totalCount).to.equal(2);
    expect(result.value.wasMerge).to.equal(false);
    expect(result.value.todos.map((t) => t.status)).to.deep.equal([TodoStatus.IN_PROGRESS, TodoStatus.PENDING]);
    expect(done.toolCall.toolCallId).to.equal(CALL_ID);
  });

  it("shows a merge applied to the list the round began with", () => {
    const before = [
      { id: "a", content: "Read the loader", status: "in_progress" as const },
      { id: "c", content: "Write a test", status: "pending" as const },
    ];
    const update = [
      { id: "a", content: "Read the loader", status: "completed" },
      { id: "d", content: "Ship it", status: "pending" },
    ];
    const done = completionOf(
      todoWrite.begin(invocation("TodoWrite", { todos: update, merge: true }), inTurn(0, before)),
    );
    const result = branch(done.toolCall, "updateTodosToolCall").result?.result;
    if (result?.case !== "success") expect.fail("expected success");
    expect(result.value.todos.map((t) => `${t.id}:${t.status}`)).to.deep.equal([
      `a:${TodoStatus.COMPLETED}`,
      `c:${TodoStatus.PENDING}`,
      `d:${TodoStatus.PENDING}`,
    ]);
    expect(result.value.wasMerge).to.equal(true);
    expect(JSON.parse(done.content)).to.deep.equal({ merge: true, todos: update });
  });

  for (const [what, args, fragment] of [
    ["one item (minItems 2)", { todos: [two[0]], merge: false }, "at least 2"],
    ["an unknown status", { todos: [two[0], { ...two[1], status: "done" }], merge: false }, '"status" must be one of'],
    ["no merge", { todos: two }, '"merge" is required'],
    ["an item without content", { todos: [two[0], { id: "b", status: "pending" }], merge: true }, '"content"'],
  ] as const) {
    it(`refuses ${what} with an error the model can read`, () => {
      const started = todoWrite.started(invocation("TodoWrite", args), ctx);
      if (!("invalid" in started)) expect.fail("expected invalid arguments");
      expect(started.invalid).to.include("Invalid arguments for TodoWrite").and.include(fragment);
    });
  }

  it("is never answered through an Exec", () => {
    const call = invocation("TodoWrite", { todos: two, merge: false });
    const message = clientMessage({ case: "readResult", value: {} });
    expect(protocolErrorOf(todoWrite.onExecMessage(call, undefined, message))).to.include("never sent");
  });
});

describe("UpdateCurrentStep driver", () => {
  it("numbers the step after the turn's earlier steps (3 for thinking, text, this call)", () => {
    const call = invocation("UpdateCurrentStep", { current_step: "Reading the loader" });
    const card = branch(startedCall(updateStep.started(call, ctx)), "communicateUpdateToolCall");
    expect(card.args?.currentStep).to.equal("Reading the loader");
    const done = completionOf(updateStep.begin(call, inTurn(2)));
    const result = branch(done.toolCall, "communicateUpdateToolCall").result?.result;
    if (result?.case !== "success") expect.fail("expected success");
    expect(result.value).to.include({ currentStep: "Reading the loader", messageIndex: 3 });
    expect(done.content).to.equal('{"current_step":"Reading the loader","message_index":3}');
  });

  it("carries the final summary and subtitle in its result", () => {
    const args = { final_summary: "Fixed the loader", completed_subtitle: "1 file changed" };
    const done = completionOf(updateStep.begin(invocation("UpdateCurrentStep", args), inTurn(5)));
    expect(JSON.parse(done.content)).to.deep.equal({ message_index: 6, ...args });
  });

  it("refuses an empty step (minLength 1)", () => {
    const started = updateStep.started(invocation("UpdateCurrentStep", { current_step: "" }), ctx);
    if (!("invalid" in started)) expect.fail("expected invalid arguments");
    expect(started.invalid).to.include('"current_step" must not be empty');
  });

  it("needs the round to say where the turn stands", () => {
    const step = updateStep.begin(invocation("UpdateCurrentStep", { current_step: "x" }), ctx);
    expect(protocolErrorOf(step)).to.include("where the turn is");
  });
});
