// AskQuestion: card ask_question_tool_call, one Interaction ask_question_interaction_query{args, tool_call_id} →
// ask_question_interaction_response, whose AskQuestionResult is itself the terminal result
// (docs/protocol/cursor-tools.md §1.1, §5.10). No Exec.
import { create } from "@bufbuild/protobuf";
import { AskQuestionArgsSchema, AskQuestionInteractionQuerySchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { AskQuestionArgs, AskQuestionResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalBoolean, optionalString, parseOrInvalid, requiredObjectArray, requiredString } from "./args.js";
import type { DriverStep, ToolDriver } from "./types.js";
import { completed, toolCall, wireName } from "./wire.js";

const NAME = "AskQuestion";

type State = { args: AskQuestionArgs };

function parseArgs(args: Record<string, unknown>): AskQuestionArgs {
  return create(AskQuestionArgsSchema, {
    title: optionalString(args, "title") ?? "",
    questions: requiredObjectArray(args, "questions", 1, (q) => ({
      id: requiredString(q, "id"),
      prompt: requiredString(q, "prompt"),
      options: requiredObjectArray(q, "options", 2, (o) => ({
        id: requiredString(o, "id"),
        label: requiredString(o, "label"),
      })),
      allowMultiple: optionalBoolean(q, "allow_multiple") ?? false,
    })),
  });
}

function card(callId: string, args?: AskQuestionArgs, result?: AskQuestionResult) {
  return toolCall(callId, { case: "askQuestionToolCall", value: { args, result } });
}

/** The answers as the model reads them: each question, then the labels picked and any words of the user's own. */
function answersText(args: AskQuestionArgs, result: Extract<AskQuestionResult["result"], { case: "success" }>) {
  return args.questions
    .map((q) => {
      const answer = result.value.answers.find((a) => a.questionId === q.id);
      if (!answer) return `${q.prompt}\nNo answer.`;
      const picked = answer.selectedOptionIds.map((id) => q.options.find((o) => o.id === id)?.label ?? id);
      const lines = [q.prompt, `Answer: ${picked.length ? picked.join(", ") : "(no option chosen)"}`];
      if (answer.freeformText) lines.push(`The user added: ${answer.freeformText}`);
      return lines.join("\n");
    })
    .join("\n\n");
}

/** Canonical text and outcome per result branch; undefined when no branch is set. */
function outcome(
  args: AskQuestionArgs,
  r: AskQuestionResult["result"],
): { content: string; isError: boolean } | undefined {
  switch (r.case) {
    case "success":
      return { content: answersText(args, r), isError: false };
    case "rejected":
      return { content: `The user declined to answer${r.value.reason ? `: ${r.value.reason}` : "."}`, isError: true };
    case "error":
      return { content: `The questions could not be asked: ${r.value.errorMessage || "unknown error"}`, isError: true };
    case "async":
      return {
        content: "The questions are with the user; their answers will come in a later message.",
        isError: false,
      };
    case undefined:
      return undefined;
  }
}

export const askQuestionDriver: ToolDriver<State> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(NAME, () => parseArgs(call.args));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok) };
  },
  begin(call): DriverStep<State> {
    const p = parseOrInvalid(NAME, () => parseArgs(call.args));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const value = create(AskQuestionInteractionQuerySchema, { args: p.ok, toolCallId: call.callId });
    const query = { case: "askQuestionInteractionQuery" as const, value };
    return { kind: "query", query, state: { args: p.ok } };
  },
  onExecMessage: () => ({ kind: "protocol_error", message: `${NAME}: the client answered an Exec it was never sent` }),
  onInteractionResponse(call, state, answer) {
    if (answer.case !== "askQuestionInteractionResponse") {
      const got = answer.case ? wireName(answer.case) : "nothing";
      return { kind: "protocol_error", message: `${NAME}: expected ask_question_interaction_response, got ${got}` };
    }
    const result = answer.value.result;
    const done = result && outcome(state.args, result.result);
    if (!done || !result)
      return { kind: "protocol_error", message: `${NAME}: ask_question_interaction_response has no result set` };
    return completed(state, done.content, done.isError, card(call.callId, state.args, result));
  },
};
