// CreatePlan: card create_plan_tool_call, one Interaction create_plan_request_query{args, tool_call_id} →
// create_plan_request_response, whose CreatePlanResult (plan URI, success or error) is itself the terminal result
// (docs/protocol/cursor-tools.md §5.10). The success text is what the conversation's plan is folded from
// (cursor/plan-state.ts), so its first line has one fixed form.
import { create } from "@bufbuild/protobuf";
import {
  CreatePlanArgsSchema,
  CreatePlanRequestQuerySchema,
  type CreatePlanArgs,
  type CreatePlanResult,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalString, parseOrInvalid, requiredObjectArray, requiredString } from "./args.js";
import type { DriverStep, ToolDriver } from "./types.js";
import { completed, toolCall, wireName } from "./wire.js";

export const CREATE_PLAN = "CreatePlan";

type State = { args: CreatePlanArgs };

const REVIEW_NOTE = "The user now reviews the plan. Tell them it is ready; do not start on it.";

function parseArgs(args: Record<string, unknown>): CreatePlanArgs {
  const todos =
    args.todos === undefined
      ? []
      : requiredObjectArray(args, "todos", 0, (t) => ({
          id: requiredString(t, "id"),
          content: requiredString(t, "content"),
        }));
  return create(CreatePlanArgsSchema, {
    plan: optionalString(args, "plan") ?? "",
    overview: optionalString(args, "overview") ?? "",
    name: optionalString(args, "name") ?? "",
    todos,
  });
}

function card(callId: string, args?: CreatePlanArgs, result?: CreatePlanResult) {
  return toolCall(callId, { case: "createPlanToolCall", value: { args, result } });
}

/** The first line of a successful CreatePlan result: `Plan saved: <plan uri>` (the URI may be empty). */
export function planSavedLine(planUri: string): string {
  return `Plan saved: ${planUri}`;
}

function outcome(result: CreatePlanResult): { content: string; isError: boolean } | undefined {
  switch (result.result.case) {
    case "success":
      return {
        content: `${planSavedLine(result.planUri)}\n${REVIEW_NOTE}`,
        isError: false,
      };
    case "error":
      return { content: `The plan could not be saved: ${result.result.value.error || "unknown error"}`, isError: true };
    case undefined:
      return undefined;
  }
}

export const createPlanDriver: ToolDriver<State> = {
  name: CREATE_PLAN,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(CREATE_PLAN, () => parseArgs(call.args));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok) };
  },
  begin(call): DriverStep<State> {
    const p = parseOrInvalid(CREATE_PLAN, () => parseArgs(call.args));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const value = create(CreatePlanRequestQuerySchema, { args: p.ok, toolCallId: call.callId });
    return { kind: "query", query: { case: "createPlanRequestQuery", value }, state: { args: p.ok } };
  },
  onExecMessage: () => ({
    kind: "protocol_error",
    message: `${CREATE_PLAN}: the client answered an Exec it was never sent`,
  }),
  onInteractionResponse(call, state, answer) {
    if (answer.case !== "createPlanRequestResponse") {
      const got = answer.case ? wireName(answer.case) : "nothing";
      return { kind: "protocol_error", message: `${CREATE_PLAN}: expected create_plan_request_response, got ${got}` };
    }
    const result = answer.value.result;
    const done = result && outcome(result);
    if (!done || !result)
      return { kind: "protocol_error", message: `${CREATE_PLAN}: create_plan_request_response has no result set` };
    return completed(state, done.content, done.isError, card(call.callId, state.args, result));
  },
};
