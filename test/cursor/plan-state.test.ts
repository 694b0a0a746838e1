import { expect } from "chai";
import { savedPlans } from "../../cursor/plan-state.js";
import type { CanonicalMessage } from "../../providers/messages.js";

const call = (id: string, plan: string): CanonicalMessage => ({
  role: "assistant",
  text: "",
  toolCalls: [{ id, name: "CreatePlan", argumentsJson: JSON.stringify({ name: "p", plan }), index: 0 }],
});
const result = (id: string, content: string, isError = false): CanonicalMessage => ({
  role: "tool",
  toolCallId: id,
  toolName: "CreatePlan",
  content,
  isError,
});

describe("plan state: a fold of the history", () => {
  it("keeps every saved plan in history order, the last one current", () => {
    const history: CanonicalMessage[] = [
      { role: "user", content: "plan it", origin: "runtime", eventId: "e1" },
      call("c1", "first"),
      result("c1", "Plan saved: file:///a.plan.md\nThe user now reviews the plan."),
      call("c2", "second"),
      result("c2", "Plan saved: file:///b.plan.md\nThe user now reviews the plan."),
    ];
    expect(savedPlans(history)).to.deep.equal([
      { id: "c1", uri: "file:///a.plan.md", plan: "first" },
      { id: "c2", uri: "file:///b.plan.md", plan: "second" },
    ]);
  });

  it("ignores plans the client could not save and results of other tools", () => {
    const history: CanonicalMessage[] = [
      call("c1", "first"),
      result("c1", "The plan could not be saved: disk full", true),
      { role: "tool", toolCallId: "x", toolName: "Read", content: "Plan saved: nope", isError: false },
    ];
    expect(savedPlans(history)).to.deep.equal([]);
  });

  it("is the same for the same history (a restart derives what the run had)", () => {
    const history = [call("c1", "first"), result("c1", "Plan saved: u")];
    expect(savedPlans(structuredClone(history))).to.deep.equal(savedPlans(history));
  });
});
