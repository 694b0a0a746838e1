import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { CheckpointBuilder } from "../../cursor/checkpoint-builder.js";
import { foldProgress } from "../../cursor/progress-updates.js";
import { ConversationStateStructureSchema, UserMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalMessage } from "../../providers/messages.js";

const call = (id: string, name: string, args: object) => ({ id, index: 0, name, argumentsJson: JSON.stringify(args) });
const result = (id: string, isError = false): CanonicalMessage => ({
  role: "tool",
  toolCallId: id,
  toolName: "UpdateCurrentStep",
  content: isError ? "refused" : "ok",
  isError,
});

describe("subagent progress fold", () => {
  it("folds the current turn's successful UpdateCurrentStep calls at their step positions; the last summary wins", () => {
    const history: CanonicalMessage[] = [
      { role: "user", content: "earlier turn", origin: "runtime" },
      { role: "assistant", text: "", toolCalls: [call("old", "UpdateCurrentStep", { current_step: "stale" })] },
      result("old"),
      { role: "user", content: "task", origin: "runtime", eventId: "run-request:r1" },
      // thinking (1), text (2), the call (3): the captured first case.
      {
        role: "assistant",
        thinking: "plan",
        text: "Starting.",
        toolCalls: [call("u1", "UpdateCurrentStep", { current_step: "Reading the parser" })],
      },
      result("u1"),
      {
        role: "assistant",
        text: "",
        toolCalls: [
          call("g1", "Glob", { glob_pattern: "*" }),
          call("u2", "UpdateCurrentStep", { current_step: "Refused one" }),
          call("u3", "UpdateCurrentStep", { current_step: "Writing the report", final_summary: "Parser mapped" }),
        ],
      },
      result("g1"),
      result("u2", true),
      result("u3"),
      { role: "assistant", text: "", toolCalls: [call("u4", "UpdateCurrentStep", { completed_subtitle: "1 file" })] },
      result("u4"),
    ];
    const state = foldProgress(history)!;
    expect(state.history.map((h) => [h.step, h.messageIndex])).to.deep.equal([
      ["Reading the parser", 3],
      ["Writing the report", 6],
    ]);
    expect(state.finalSummary).to.equal("Parser mapped");
    expect(state.completedSubtitle).to.equal("1 file");
  });

  it("is undefined for a turn that reported nothing, and ignores a call still without a result", () => {
    const history: CanonicalMessage[] = [
      { role: "user", content: "task", origin: "runtime" },
      { role: "assistant", text: "", toolCalls: [call("u1", "UpdateCurrentStep", { current_step: "pending" })] },
    ];
    expect(foldProgress(history)).to.equal(undefined);
  });

  it("the checkpoint files the folded state under the parent's Task call id", () => {
    const history: CanonicalMessage[] = [
      { role: "user", content: "task", origin: "runtime" },
      { role: "assistant", text: "", toolCalls: [call("u1", "UpdateCurrentStep", { current_step: "Looking" })] },
      result("u1"),
    ];
    const builder = new CheckpointBuilder(
      create(ConversationStateStructureSchema),
      { role: "system", content: "system" },
      { kind: "new", userMessage: create(UserMessageSchema, { text: "task" }) },
      "child-request",
    );
    const progress = { parentToolCallId: "call_parent", state: foldProgress(history)! };
    const { state } = builder.snapshot({ pending: [], usedTokens: 0, maxTokens: 0, progress });
    expect(Object.keys(state.communicateUpdateStatesByParentToolCallId)).to.deep.equal(["call_parent"]);
    expect(state.communicateUpdateStatesByParentToolCallId.call_parent!.history[0]).to.include({
      step: "Looking",
      messageIndex: 1,
    });
  });
});
