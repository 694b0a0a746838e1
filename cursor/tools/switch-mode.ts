// SwitchMode: card switch_mode_tool_call, one Interaction switch_mode_request_query{args{target_mode_id,
// explanation, tool_call_id}} → switch_mode_request_response, approved or rejected (docs/protocol/cursor-tools.md
// §5.10). An approval completes the call with success{from, to} and switches the run's mode for its next model call
// (docs/protocol/cursor-tools.md §6.5); a rejection completes it with the user's reason as an error result.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  SwitchModeArgsSchema,
  SwitchModeRequestQuerySchema,
  type SwitchModeArgs,
  type SwitchModeResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { isUserModeId, type ModeId, USER_MODE_IDS } from "../../prompt/assets.js";
import { ArgsError, optionalString, parseOrInvalid, requiredString } from "./args.js";
import type { DriverStep, ToolContext, ToolDriver, ToolInvocation } from "./types.js";
import { toolCall, wireName } from "./wire.js";

const NAME = "SwitchMode";

type State = { args: SwitchModeArgs; from: ModeId; to: ModeId };

function parseArgs(call: ToolInvocation, ctx: ToolContext): State {
  const target = requiredString(call.args, "target_mode_id");
  if (!isUserModeId(target))
    throw new ArgsError(`"target_mode_id" must be one of ${USER_MODE_IDS.join(", ")}, got "${target}"`);
  if (!ctx.mode) throw new Error("SwitchMode needs the run's mode in its tool context");
  if (target === ctx.mode) throw new ArgsError(`the conversation is already in ${target} mode`);
  const explanation = optionalString(call.args, "explanation");
  const args = create(SwitchModeArgsSchema, {
    targetModeId: target,
    toolCallId: call.callId,
    ...(explanation !== undefined ? { explanation } : {}),
  });
  return { args, from: ctx.mode, to: target };
}

function card(
  callId: string,
  args?: SwitchModeArgs,
  result?: MessageInitShape<typeof SwitchModeResultSchema>["result"],
) {
  return toolCall(callId, { case: "switchModeToolCall", value: { args, ...(result ? { result: { result } } : {}) } });
}

export const switchModeDriver: ToolDriver<State> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call, ctx) {
    const p = parseOrInvalid(NAME, () => parseArgs(call, ctx));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok.args) };
  },
  begin(call, ctx): DriverStep<State> {
    const p = parseOrInvalid(NAME, () => parseArgs(call, ctx));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const value = create(SwitchModeRequestQuerySchema, { args: p.ok.args });
    return { kind: "query", query: { case: "switchModeRequestQuery", value }, state: p.ok };
  },
  onExecMessage: () => ({ kind: "protocol_error", message: `${NAME}: the client answered an Exec it was never sent` }),
  onInteractionResponse(call, state, answer) {
    if (answer.case !== "switchModeRequestResponse") {
      const got = answer.case ? wireName(answer.case) : "nothing";
      return { kind: "protocol_error", message: `${NAME}: expected switch_mode_request_response, got ${got}` };
    }
    const { result } = answer.value;
    const { from, to } = state;
    switch (result.case) {
      case "approved": {
        const success = { case: "success" as const, value: { fromModeId: from, toModeId: to } };
        const content =
          `The user approved: the conversation is now in ${to} mode (it was in ${from} mode). ` +
          `From your next step on you have the tools of ${to} mode.`;
        const completion = {
          content,
          isError: false,
          toolCall: card(call.callId, state.args, success),
          switchMode: to,
        };
        return { kind: "complete", completion, state };
      }
      case "rejected": {
        const { reason } = result.value;
        const rejected = { case: "rejected" as const, value: { reason } };
        const why = reason ? `: ${reason}` : ".";
        const content = `The user declined to switch to ${to} mode${why} Stay in ${from} mode.`;
        return {
          kind: "complete",
          completion: { content, isError: true, toolCall: card(call.callId, state.args, rejected) },
          state,
        };
      }
      case undefined:
        // An approve/reject answer must pick its branch: an empty one is not a rejection (§5.10).
        return {
          kind: "protocol_error",
          message: `${NAME}: switch_mode_request_response has neither approved nor rejected`,
        };
    }
  },
};
