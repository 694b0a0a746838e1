// Task: card task_tool_call, one Exec subagent_args → subagent_result; the client starts the child as its own run
// against this server (docs/protocol/cursor-tools.md §5.11). The model is resolved here, once, in the parent run.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  SubagentArgsSchema,
  SubagentExecutionEnvironment,
  type SubagentResult,
  type SubagentTypeSchema,
  type TaskArgs,
  TaskArgsSchema,
  type TaskResult,
  TaskResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import {
  ArgsError,
  optionalBoolean,
  optionalEnum,
  optionalString,
  optionalStringArray,
  requiredString,
} from "./args.js";
import { singleExecDriver } from "./single-exec.js";
import type { SubagentSettings, ToolCompletion, ToolContext, ToolInvocation } from "./types.js";
import { toolCall } from "./wire.js";

export const TASK = "Task";
/** What the model names the general type; TaskArgs encodes it as `unspecified` (docs/protocol/cursor-tools.md §5.11). */
export const GENERAL_PURPOSE = "generalPurpose";
/** Task.model and an override both say this to mean the parent's own model. */
const INHERIT = "inherit";

type TypeCase = NonNullable<MessageInitShape<typeof SubagentTypeSchema>["type"]>["case"];

/** Subagent types that have their own SubagentType oneof; any other name is a custom type, kept verbatim. */
const TYPE_CASES = new Map<string, Exclude<TypeCase, "custom" | "unspecified" | undefined>>([
  ["explore", "explore"],
  ["shell", "shell"],
  ["bash", "bash"],
  ["debug", "debug"],
  ["cursor-guide", "cursorGuide"],
  ["browser-use", "browserUse"],
  ["computer-use", "computerUse"],
  ["media-review", "mediaReview"],
  ["vm-setup-helper", "vmSetupHelper"],
  ["watch-video", "watchVideo"],
]);

export interface TaskCall {
  description: string;
  prompt: string;
  /** The name the model chose, as the SubagentArgs string carries it. */
  subagentType: string;
  /** The model id the child runs on, resolved in the parent. */
  modelId: string;
  runInBackground: boolean;
  resume: string | undefined;
  attachments: string[];
  environment: "local" | "cloud" | undefined;
}

function subagentType(name: string): MessageInitShape<typeof SubagentTypeSchema> {
  if (name === GENERAL_PURPOSE) return { type: { case: "unspecified", value: {} } };
  const known = TYPE_CASES.get(name);
  return known ? { type: { case: known, value: {} } } : { type: { case: "custom", value: { name } } };
}

/**
 * The child's model: the run request's override for the type first (a model, `inherit`, or `disabled`, which
 * refuses the type), then Task.model, where absent or `inherit` means the parent's model (cursor-tools.md §5.11).
 */
export function resolveSubagentModel(
  settings: SubagentSettings | undefined,
  type: string,
  requested: string | undefined,
): string {
  const parentModel = settings?.parentModelId ?? "";
  const override = settings?.modelOverrides.find((o) => o.subagentType === type);
  switch (override?.selection.case) {
    case "disabled":
      if (override.selection.value) throw new ArgsError(`the subagent type "${type}" is disabled for this run`);
      break;
    case "inherit":
      if (override.selection.value) return parentModel;
      break;
    case "model":
      if (override.selection.value.modelId) return override.selection.value.modelId;
      break;
  }
  return requested === undefined || requested === INHERIT ? parentModel : requested;
}

function parseArgs(args: Record<string, unknown>, ctx: ToolContext): TaskCall {
  const type = optionalString(args, "subagent_type") ?? GENERAL_PURPOSE;
  if (type === "") throw new ArgsError(`"subagent_type" must not be empty`);
  return {
    description: requiredString(args, "description"),
    prompt: requiredString(args, "prompt"),
    subagentType: type,
    modelId: resolveSubagentModel(ctx.subagents, type, optionalString(args, "model")),
    runInBackground: optionalBoolean(args, "run_in_background") ?? false,
    resume: optionalString(args, "resume"),
    attachments: optionalStringArray(args, "file_attachments") ?? [],
    environment: optionalEnum(args, "environment", ["local", "cloud"] as const),
  };
}

const ENVIRONMENTS = {
  local: SubagentExecutionEnvironment.LOCAL,
  cloud: SubagentExecutionEnvironment.CLOUD,
} as const;

function taskArgs(t: TaskCall): TaskArgs {
  return create(TaskArgsSchema, {
    description: t.description,
    prompt: t.prompt,
    subagentType: subagentType(t.subagentType),
    model: t.modelId,
    ...(t.resume !== undefined ? { resume: t.resume } : {}),
    attachments: t.attachments,
    environment: t.environment ? ENVIRONMENTS[t.environment] : SubagentExecutionEnvironment.UNSPECIFIED,
  });
}

function card(callId: string, t?: TaskCall, result?: TaskResult) {
  return toolCall(callId, { case: "taskToolCall", value: { args: t ? taskArgs(t) : undefined, result } });
}

/**
 * The text result always names the child it created — even a background child with no final message yet — and a
 * resume of an existing agent returns only that execution's result (cursor-tools.md §5.11).
 */
export function taskResultText(t: TaskCall, agentId: string, finalMessage: string | undefined): string {
  const identity = resumedAgent(t.resume) !== undefined ? [] : [identityLines(t.description, agentId)];
  const text = [...identity, finalMessage ?? ""].filter((part) => part !== "").join("\n\n");
  return text || `The subagent ${agentId} finished without a message.`;
}

/** The existing agent a resume continues; `self` is no other agent. */
function resumedAgent(resume: string | undefined): string | undefined {
  return resume !== undefined && resume !== "self" ? resume : undefined;
}

function identityLines(description: string, agentId: string): string {
  return `Subagent name: ${description}\nSubagent ID: ${agentId}`;
}

/**
 * The child a successful Task result names, read back from the persisted call and result (the subagent id is the
 * child's conversation id): the agent a resume continued, else the id in the result's identity lines. Undefined for
 * arguments or a text of another shape.
 */
export function taskSubagentId(argumentsJson: string, result: string): string | undefined {
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    return undefined;
  }
  if (typeof args !== "object" || args === null) return undefined;
  const { description, resume } = args as { description?: unknown; resume?: unknown };
  const resumed = resumedAgent(typeof resume === "string" ? resume : undefined);
  if (resumed !== undefined) return resumed;
  if (typeof description !== "string") return undefined;
  const lead = identityLines(description, "");
  if (!result.startsWith(lead)) return undefined;
  return result.slice(lead.length).split("\n", 1)[0] || undefined;
}

function complete(call: ToolInvocation, t: TaskCall, r: SubagentResult): ToolCompletion | undefined {
  switch (r.result.case) {
    case "success": {
      const s = r.result.value;
      const result = create(TaskResultSchema, {
        result: {
          case: "success",
          value: {
            agentId: s.agentId,
            isBackground: t.runInBackground,
            backgroundReason: s.backgroundReason,
            ...(s.transcriptPath !== undefined ? { transcriptPath: s.transcriptPath } : {}),
          },
        },
      });
      const content = taskResultText(t, s.agentId, s.finalMessage);
      return { content, isError: false, toolCall: card(call.callId, t, result) };
    }
    case "error": {
      const text = `The subagent failed${r.result.value.agentId ? ` (${r.result.value.agentId})` : ""}: ${
        r.result.value.error || "unknown error"
      }`;
      const result = create(TaskResultSchema, { result: { case: "error", value: { error: text } } });
      return { content: text, isError: true, toolCall: card(call.callId, t, result) };
    }
    case undefined:
      return undefined;
  }
}

export const taskDriver = singleExecDriver<TaskCall, "subagentResult">({
  name: TASK,
  parse: (call, ctx) => parseArgs(call.args, ctx),
  card: (callId, t) => card(callId, t),
  request: (call, t, ctx) => ({
    case: "subagentArgs",
    value: create(SubagentArgsSchema, {
      toolCallId: call.callId,
      subagentType: t.subagentType,
      modelId: t.modelId,
      prompt: t.prompt,
      readonly: false,
      runInBackground: t.runInBackground,
      ...(t.resume !== undefined ? { resumeAgentId: t.resume } : {}),
      parentConversationId: ctx.conversationId,
      rootParentConversationId: ctx.subagents?.conversationGroupId || ctx.conversationId,
      environment: t.environment ? ENVIRONMENTS[t.environment] : SubagentExecutionEnvironment.UNSPECIFIED,
    }),
  }),
  resultCase: "subagentResult",
  complete,
});
