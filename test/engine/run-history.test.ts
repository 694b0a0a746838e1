// The children a run's Task calls started, as RunHistory folds them from its messages (docs/protocol/cursor-run.md
// §13.2): a Task call names its child once its successful result is in the history, wherever the two were pushed.
import { expect } from "chai";
import { RunHistory } from "../../engine/run-history.js";
import type { CanonicalMessage } from "../../providers/messages.js";

const task = (id: string, description: string) => ({
  id,
  index: 0,
  name: "Task",
  argumentsJson: JSON.stringify({ description, prompt: "Go." }),
});
const round = (...calls: ReturnType<typeof task>[]): CanonicalMessage => ({
  role: "assistant",
  text: "",
  toolCalls: calls,
});
const result = (toolCallId: string, content: string, isError = false): CanonicalMessage => ({
  role: "tool",
  toolCallId,
  toolName: "Task",
  content,
  isError,
});
const named = (description: string, agentId: string) => `Subagent name: ${description}\nSubagent ID: ${agentId}`;

describe("RunHistory: the subagents of its Task calls", () => {
  it("maps each Task call with a successful result to the subagent it names, in history order", () => {
    const h = new RunHistory();
    h.push(round(task("call_a", "Scan"), task("call_b", "Draft"), task("call_c", "Fail")));
    expect([...h.subagents]).to.deep.equal([]);
    h.push(result("call_b", named("Draft", "agent-b")), result("call_c", "The subagent failed: no", true));
    h.push(result("call_a", `${named("Scan", "agent-a")}\n\nFound it.`));
    expect([...h.subagents]).to.deep.equal([
      ["call_b", "agent-b"],
      ["call_a", "agent-a"],
    ]);
  });

  it("ignores a result without its call and starts over on reset", () => {
    const h = new RunHistory();
    h.push(result("call_x", named("Scan", "agent-x")));
    expect(h.subagents.size).to.equal(0);
    h.push(round(task("call_a", "Scan")), result("call_a", named("Scan", "agent-a")));
    h.reset([round(task("call_d", "Doc")), result("call_d", named("Doc", "agent-d"))]);
    expect([...h.subagents]).to.deep.equal([["call_d", "agent-d"]]);
  });
});
