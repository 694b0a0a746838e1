// The plan conversation actions (docs/protocol/cursor-run.md §2.2, §8.11): start_plan_action is a user message
// that opens a turn in plan mode; execute_plan_action carries a plan (its file's content, else the plan text) and
// the mode to carry it out in, and opens a turn whose runtime message holds the plan as its action context.
import { create } from "@bufbuild/protobuf";
import {
  type AgentMode,
  type ExecutePlanAction,
  UserMessageSchema,
  type UserMessage,
} from "../proto/gen/agent/v1/agent_pb.js";

/** The user query of a turn that executes a plan (the plan itself is the action context). */
export const EXECUTE_PLAN_QUERY = "Carry out the plan above, step by step, and report what was done.";

export interface ExecutePlanTurn {
  userMessage: UserMessage;
  mode: AgentMode;
  actionContext: string;
}

const attr = (name: string, value: string | undefined) => (value ? ` ${name}=${JSON.stringify(value)}` : "");

/** The turn an execute_plan_action opens, or undefined when it carries no plan text at all. */
export function executePlanTurn(action: ExecutePlanAction): ExecutePlanTurn | undefined {
  const plan = action.planFileContent || action.plan?.plan || "";
  if (plan.trim() === "") return undefined;
  const path = action.planFilePath || action.planFileUri;
  const open = `<plan_to_execute${attr("id", action.planId)}${attr("path", path)}>`;
  const actionContext = `${open}\n${plan.replace(/\n+$/, "")}\n</plan_to_execute>`;
  const userMessage = create(UserMessageSchema, {
    text: EXECUTE_PLAN_QUERY,
    messageId: action.kickoffMessageId ?? "",
    mode: action.executionMode,
    ...(action.planId ? { executePlanInfo: { planId: action.planId } } : {}),
  });
  // An unset execution mode is the default, agent.
  return { userMessage, mode: action.executionMode, actionContext };
}
