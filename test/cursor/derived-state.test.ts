// The to-do list and progress updates as a fold of the history (docs/protocol/cursor-run.md §8.9).
import { expect } from "chai";
import fc from "fast-check";
import {
  DerivedStateError,
  encodeTodoWriteResult,
  encodeUpdateCurrentStepResult,
  foldDerivedState,
  TODO_STATUSES,
} from "../../cursor/derived-state.js";
import type { CanonicalMessage } from "../../providers/messages.js";
import { create } from "@bufbuild/protobuf";
import { CheckpointBuilder, communicateUpdateTurnState } from "../../cursor/checkpoint-builder.js";
import { ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";

const result = (toolName: string, content: string, isError = false): CanonicalMessage => ({
  role: "tool",
  toolCallId: `call-${content.length}`,
  toolName,
  content,
  isError,
});
const todos = (merge: boolean, ...items: Array<[string, (typeof TODO_STATUSES)[number]]>) =>
  result(
    "TodoWrite",
    encodeTodoWriteResult({ merge, todos: items.map(([id, status]) => ({ id, content: `do ${id}`, status })) }),
  );

describe("derived state: the history fold", () => {
  it("replaces the list, merges by id, and ignores error results and other tools", () => {
    const history: CanonicalMessage[] = [
      { role: "user", content: "go", origin: "user" },
      todos(false, ["a", "pending"], ["b", "pending"]),
      result("Read", "TodoWrite in a file is just text"),
      todos(true, ["b", "completed"], ["c", "pending"]),
      result("TodoWrite", "Invalid arguments for TodoWrite", true),
    ];
    const state = foldDerivedState(history);
    expect(state.todos?.map((t) => `${t.id}:${t.status}`)).to.deep.equal(["a:pending", "b:completed", "c:pending"]);
    expect(state.steps).to.equal(undefined);
  });

  it("keeps each step with its index; the last summary and subtitle win", () => {
    const step = (r: Parameters<typeof encodeUpdateCurrentStepResult>[0]) =>
      result("UpdateCurrentStep", encodeUpdateCurrentStepResult(r));
    const state = foldDerivedState([
      step({ current_step: "Reading", message_index: 3 }),
      step({ current_step: "Fixing", message_index: 6, completed_subtitle: "draft" }),
      step({ message_index: 9, final_summary: "Done", completed_subtitle: "1 file" }),
    ]);
    expect(state.steps).to.deep.equal({
      history: [
        { step: "Reading", messageIndex: 3 },
        { step: "Fixing", messageIndex: 6 },
      ],
      finalSummary: "Done",
      completedSubtitle: "1 file",
    });
    expect(state.todos).to.equal(undefined);
  });

  it("refuses a stored result that is not its tool's shape instead of skipping it", () => {
    expect(() => foldDerivedState([result("TodoWrite", '{"todos":[]}')])).to.throw(DerivedStateError, "merge");
    expect(() => foldDerivedState([result("UpdateCurrentStep", "ok")])).to.throw(DerivedStateError, "not JSON");
  });

  it("folds a history in pieces to the same state as in one go (a restart folds it again)", () => {
    const item = fc.tuple(fc.constantFrom("a", "b", "c", "d"), fc.constantFrom(...TODO_STATUSES));
    const write = fc.tuple(fc.boolean(), fc.array(item, { maxLength: 4 })).map(([m, xs]) => todos(m, ...xs));
    fc.assert(
      fc.property(fc.array(write, { maxLength: 8 }), fc.nat(8), (history, cut) => {
        const at = Math.min(cut, history.length);
        const whole = foldDerivedState(history);
        const pieces = foldDerivedState(history.slice(at), foldDerivedState(history.slice(0, at)));
        expect(pieces).to.deep.equal(whole);
        expect(foldDerivedState(JSON.parse(JSON.stringify(history)))).to.deep.equal(whole);
      }),
    );
  });

  it("gives a child run's CommunicateUpdateTurnState for its parent's map, from the same fold", () => {
    const steps = foldDerivedState([
      result("UpdateCurrentStep", encodeUpdateCurrentStepResult({ current_step: "Reading", message_index: 2 })),
      result("UpdateCurrentStep", encodeUpdateCurrentStepResult({ message_index: 4, final_summary: "Done" })),
    ]).steps!;
    const state = communicateUpdateTurnState(steps);
    expect(state.history.map((h) => [h.step, h.messageIndex])).to.deep.equal([["Reading", 2]]);
    expect(state.finalSummary).to.equal("Done");
    expect(state.completedSubtitle).to.equal(undefined);
  });

  it("files progress by Task call id in the checkpoint, keeping the client's other entries", () => {
    const steps = (step: string) =>
      foldDerivedState([
        result("UpdateCurrentStep", encodeUpdateCurrentStepResult({ current_step: step, message_index: 1 })),
      ]).steps!;
    const base = create(ConversationStateStructureSchema, {
      communicateUpdateStatesByParentToolCallId: {
        call_kept: communicateUpdateTurnState(steps("Kept")),
        call_a: communicateUpdateTurnState(steps("Older")),
      },
    });
    const builder = new CheckpointBuilder(base, { role: "system", content: "s" }, { kind: "none" }, "req-1");
    const progress = new Map([
      ["call_a", steps("Newer")],
      ["__proto__", steps("Odd id")],
    ]);
    const { state } = builder.snapshot({ pending: [], usedTokens: 0, maxTokens: 0, progress });
    const filed = state.communicateUpdateStatesByParentToolCallId;
    const stepOf = (id: string) => (Object.hasOwn(filed, id) ? filed[id]!.history.map((h) => h.step) : undefined);
    expect(["call_kept", "call_a", "__proto__"].map(stepOf)).to.deep.equal([["Kept"], ["Newer"], ["Odd id"]]);
    expect(Object.getPrototypeOf(filed)).to.equal(Object.prototype);
  });
});
