import { expect } from "chai";
import { projectHistory, type CanonicalMessage } from "../../providers/messages.js";

const call = (id: string, index: number) => ({ id, name: "Read", argumentsJson: `{"path":"${id}"}`, index });
const result = (id: string): CanonicalMessage => ({
  role: "tool",
  toolCallId: id,
  toolName: "Read",
  content: `r-${id}`,
  isError: false,
  toolRoundId: "round",
});

describe("history projection (docs/protocol/cursor-run.md §8.3, §8.5)", () => {
  it("drops the system root, restores provider call order and keeps results in completion order", () => {
    const history: CanonicalMessage[] = [
      { role: "system", content: "s" },
      { role: "user", content: "u", origin: "runtime" },
      {
        role: "assistant",
        text: "t",
        thinking: "th",
        replay: { provider: "openai-chat", reasoningContent: "th" },
        toolRoundId: "round",
        toolCalls: [call("b", 1), call("a", 0)],
      },
      result("b"),
      result("a"),
    ];
    expect(projectHistory(history)).to.deep.equal([
      { role: "user", content: "u" },
      {
        role: "assistant",
        text: "t",
        thinking: "th",
        replay: { provider: "openai-chat", reasoningContent: "th" },
        toolCalls: [
          { id: "a", name: "Read", argumentsJson: '{"path":"a"}' },
          { id: "b", name: "Read", argumentsJson: '{"path":"b"}' },
        ],
      },
      { role: "tool", toolCallId: "b", content: "r-b" },
      { role: "tool", toolCallId: "a", content: "r-a" },
    ]);
  });

  it("never projects a round whose results are incomplete (no dangling tool calls)", () => {
    const history: CanonicalMessage[] = [
      { role: "user", content: "u", origin: "runtime" },
      { role: "assistant", text: "", toolRoundId: "round", toolCalls: [call("a", 0), call("b", 1)] },
      result("a"),
      { role: "user", content: "next", origin: "runtime" },
    ];
    expect(projectHistory(history)).to.deep.equal([
      { role: "user", content: "u" },
      { role: "user", content: "next" },
    ]);
  });

  it("is deterministic: the same history gives the same projection, and appending only extends it", () => {
    const base: CanonicalMessage[] = [
      { role: "user", content: "u", origin: "runtime" },
      { role: "assistant", text: "a", toolCalls: [] },
    ];
    const longer: CanonicalMessage[] = [...base, { role: "user", content: "v", origin: "runtime" }];
    const first = JSON.stringify(projectHistory(base));
    expect(JSON.stringify(projectHistory(base))).to.equal(first);
    expect(JSON.stringify(projectHistory(longer)).startsWith(first.slice(0, -1))).to.equal(true);
  });
});
