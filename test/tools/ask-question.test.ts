import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { AskQuestionResultSchema, type InteractionResponse } from "../../proto/gen/agent/v1/agent_pb.js";
import { askQuestionDriver } from "../../cursor/tools/ask-question.js";
import type { DriverStep } from "../../cursor/tools/types.js";
import { completionOf, ctx, invocation, protocolErrorOf } from "./helpers.js";

const args = {
  title: "Before I change the build",
  questions: [
    {
      id: "bundler",
      prompt: "Which bundler should the build use?",
      options: [
        { id: "esbuild", label: "esbuild" },
        { id: "rollup", label: "Rollup" },
      ],
    },
    {
      id: "targets",
      prompt: "Which targets?",
      allow_multiple: true,
      options: [
        { id: "node", label: "Node 20" },
        { id: "web", label: "Browsers" },
      ],
    },
  ],
};
const call = invocation("AskQuestion", args);

function queryOf<S>(step: DriverStep<S>) {
  if (step.kind !== "query") expect.fail(`expected a query step, got ${step.kind}`);
  return step;
}

const answer = (
  result: Parameters<typeof create<typeof AskQuestionResultSchema>>[1],
): InteractionResponse["result"] => ({
  case: "askQuestionInteractionResponse",
  value: { $typeName: "agent.v1.AskQuestionInteractionResponse", result: create(AskQuestionResultSchema, result) },
});

describe("AskQuestion driver", () => {
  it("asks through an interaction query carrying the typed args and the call id", () => {
    const step = queryOf(askQuestionDriver.begin(call, ctx));
    expect(step.query.case).to.equal("askQuestionInteractionQuery");
    const value = step.query.value as {
      args: { title: string; questions: Array<{ options: unknown[] }> };
      toolCallId: string;
    };
    expect(value.toolCallId).to.equal(call.callId);
    expect(value.args.title).to.equal("Before I change the build");
    expect(value.args.questions.map((q) => q.options.length)).to.deep.equal([2, 2]);
  });

  it("refuses a question with fewer than two options, naming it", () => {
    const bad = { questions: [{ id: "q", prompt: "?", options: [{ id: "a", label: "A" }] }] };
    const started = askQuestionDriver.started(invocation("AskQuestion", bad), ctx);
    expect(started).to.deep.equal({
      invalid: 'Invalid arguments for AskQuestion: questions[0]: "options" needs at least 2 items.',
    });
  });

  it("turns the answers into text naming each question and the labels picked", () => {
    const { state } = queryOf(askQuestionDriver.begin(call, ctx));
    const done = completionOf(
      askQuestionDriver.onInteractionResponse!(
        call,
        state,
        answer({
          result: {
            case: "success",
            value: {
              answers: [
                { questionId: "bundler", selectedOptionIds: ["esbuild"] },
                { questionId: "targets", selectedOptionIds: ["node", "web"], freeformText: "Node first" },
              ],
            },
          },
        }),
      ),
    );
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal(
      "Which bundler should the build use?\nAnswer: esbuild\n\nWhich targets?\nAnswer: Node 20, Browsers\nThe user added: Node first",
    );
    expect(done.toolCall.tool.case).to.equal("askQuestionToolCall");
  });

  it("ends a rejected or failed question as an error result the model can read", () => {
    const { state } = queryOf(askQuestionDriver.begin(call, ctx));
    const rejected = completionOf(
      askQuestionDriver.onInteractionResponse!(
        call,
        state,
        answer({ result: { case: "rejected", value: { reason: "not now" } } }),
      ),
    );
    expect(rejected).to.include({ content: "The user declined to answer: not now", isError: true });
    const failed = completionOf(
      askQuestionDriver.onInteractionResponse!(
        call,
        state,
        answer({ result: { case: "error", value: { errorMessage: "no UI" } } }),
      ),
    );
    expect(failed).to.include({ content: "The questions could not be asked: no UI", isError: true });
  });

  it("answers of another kind, or with no result set, are protocol errors", () => {
    const { state } = queryOf(askQuestionDriver.begin(call, ctx));
    const other = askQuestionDriver.onInteractionResponse!(call, state, {
      case: "switchModeRequestResponse",
      value: { $typeName: "agent.v1.SwitchModeRequestResponse" } as never,
    });
    expect(protocolErrorOf(other)).to.include(
      "expected ask_question_interaction_response, got switch_mode_request_response",
    );
    expect(protocolErrorOf(askQuestionDriver.onInteractionResponse!(call, state, answer({})))).to.include(
      "no result set",
    );
  });
});
