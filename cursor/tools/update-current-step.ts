// UpdateCurrentStep: a local tool (docs/protocol/cursor-tools.md §5.12). The model-facing name is UpdateCurrentStep;
// the card stays communicate_update_tool_call. Answered by the gateway at once with CommunicateUpdateSuccess
// {current_step, message_index}, message_index being the 1-based position of this call's step in the turn (the
// round tells each call how many steps come before it). The progress state is a fold of these results
// (cursor/derived-state.ts).
import { create } from "@bufbuild/protobuf";
import { CommunicateUpdateArgsSchema, CommunicateUpdateResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { CommunicateUpdateArgs, CommunicateUpdateResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { encodeUpdateCurrentStepResult, UPDATE_CURRENT_STEP } from "../derived-state.js";
import { ArgsError, optionalString, parseOrInvalid } from "./args.js";
import type { DriverStep, ToolDriver } from "./types.js";
import { completed, toolCall } from "./wire.js";

/** The schema's minLength for every text of the call. */
function nonEmpty(args: Record<string, unknown>, key: string): string | undefined {
  const value = optionalString(args, key);
  if (value === "") throw new ArgsError(`"${key}" must not be empty`);
  return value;
}

function parseArgs(args: Record<string, unknown>): CommunicateUpdateArgs {
  return create(CommunicateUpdateArgsSchema, {
    currentStep: nonEmpty(args, "current_step"),
    finalSummary: nonEmpty(args, "final_summary"),
    completedSubtitle: nonEmpty(args, "completed_subtitle"),
  });
}

function card(callId: string, args?: CommunicateUpdateArgs, result?: CommunicateUpdateResult) {
  return toolCall(callId, { case: "communicateUpdateToolCall", value: { args, result } });
}

export const updateCurrentStepDriver: ToolDriver<undefined> = {
  name: UPDATE_CURRENT_STEP,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(UPDATE_CURRENT_STEP, () => parseArgs(call.args));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok) };
  },
  begin(call, ctx): DriverStep<undefined> {
    const p = parseOrInvalid(UPDATE_CURRENT_STEP, () => parseArgs(call.args));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    if (!ctx.turn)
      return { kind: "protocol_error", message: `${UPDATE_CURRENT_STEP}: the round did not say where the turn is` };
    const messageIndex = ctx.turn.steps + 1;
    const { currentStep, finalSummary, completedSubtitle } = p.ok;
    const result = create(CommunicateUpdateResultSchema, {
      result: { case: "success", value: { currentStep: currentStep ?? "", messageIndex } },
    });
    const content = encodeUpdateCurrentStepResult({
      current_step: currentStep,
      message_index: messageIndex,
      final_summary: finalSummary,
      completed_subtitle: completedSubtitle,
    });
    return completed(undefined, content, false, card(call.callId, p.ok, result));
  },
  onExecMessage: () => ({
    kind: "protocol_error",
    message: `${UPDATE_CURRENT_STEP}: the client answered an Exec it was never sent`,
  }),
};
