// Shell: card shell_tool_call, Exec shell_stream_args, then shell_stream events on the same exec id
// (docs/protocol/cursor-tools.md §5, §5.5). start/hook_context are progress, stdout/stderr become live
// tool_call_delta, and exit / backgrounded / rejected / permission_denied / sandbox_unsupported end the call.
import { create } from "@bufbuild/protobuf";
import {
  ShellArgsSchema,
  ShellOutputNotificationConfigSchema,
  ShellResultSchema,
  SmartModeApprovalSchema,
  TimeoutBehavior,
  ToolCallDeltaSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type {
  ShellArgs,
  ShellResult,
  ShellStream,
  ShellStreamBackgrounded,
  ShellStreamExit,
} from "../../proto/gen/agent/v1/agent_pb.js";
import {
  ArgsError,
  optionalBoolean,
  optionalInteger,
  optionalObject,
  optionalString,
  optionalStringArray,
  parseOrInvalid,
  requiredString,
} from "./args.js";
import { shellBackgroundedText, shellExitText } from "./result-text.js";
import type { DriverStep, ToolCompletion, ToolContext, ToolDriver } from "./types.js";
import { toolCall, unexpectedMessage } from "./wire.js";

const NAME = "Shell";

// The ShellArgs values the official client is sent (docs/protocol/cursor-tools.md §5.5). A wrong
// timeout/timeout_behavior makes the client kill long-running commands at once.
const DEFAULT_BLOCK_UNTIL_MS = 30_000;
const HARD_TIMEOUT_MS = 86_400_000;
const FILE_OUTPUT_THRESHOLD_BYTES = 40_000n;
const PERMISSIONS = ["full_network", "all"] as const;

export interface ShellState {
  args: ShellArgs;
  terminalsFolder?: string;
  stdout: string;
  stderr: string;
  /** stdout and stderr in arrival order, as a terminal shows them. */
  output: string;
}

/** notify_on_output → output_notification: the client reports matching output later (the unit of debounce is not
 * established, so the model's number is passed as given). */
function outputNotification(args: Record<string, unknown>) {
  const notify = optionalObject(args, "notify_on_output");
  if (!notify) return undefined;
  try {
    const pattern = requiredString(notify, "pattern");
    const reason = requiredString(notify, "reason");
    const debounce = optionalInteger(notify, "debounce_ms", 0);
    return create(ShellOutputNotificationConfigSchema, { pattern, reason, debounce });
  } catch (err) {
    throw err instanceof ArgsError ? new ArgsError(`notify_on_output: ${err.message}`) : err;
  }
}

/** request_smart_mode_approval asks the client to put the command to the user, for smart_mode_block_reason. */
function smartModeApproval(callId: string, args: Record<string, unknown>) {
  const requested = optionalBoolean(args, "request_smart_mode_approval");
  const reason = optionalString(args, "smart_mode_block_reason");
  if (!requested) return undefined;
  if (!reason) throw new ArgsError('"smart_mode_block_reason" is required with request_smart_mode_approval');
  return create(SmartModeApprovalSchema, { requestId: callId, reason });
}

/** Every parameter of the model schema is validated; required_permissions has no ShellArgs field (the client asks
 * for permissions itself), so it is checked and not sent. */
function parseArgs(callId: string, args: Record<string, unknown>, ctx: ToolContext): ShellArgs {
  const command = requiredString(args, "command");
  const workingDirectory = optionalString(args, "working_directory") ?? "";
  const blockUntilMs = optionalInteger(args, "block_until_ms", 0) ?? DEFAULT_BLOCK_UNTIL_MS;
  const description = optionalString(args, "description");
  optionalStringArray(args, "required_permissions", PERMISSIONS);
  return create(ShellArgsSchema, {
    command,
    workingDirectory,
    timeout: blockUntilMs,
    toolCallId: callId,
    timeoutBehavior: TimeoutBehavior.BACKGROUND,
    hardTimeout: HARD_TIMEOUT_MS,
    fileOutputThresholdBytes: FILE_OUTPUT_THRESHOLD_BYTES,
    closeStdin: true,
    description,
    outputNotification: outputNotification(args),
    smartModeApproval: smartModeApproval(callId, args),
    conversationId: ctx.conversationId,
    adminCommandDenylist: [...(ctx.adminCommandDenylist ?? [])],
  });
}

function card(callId: string, args?: ShellArgs, result?: ShellResult) {
  return toolCall(callId, { case: "shellToolCall", value: { args, result, description: args?.description } });
}

function exitCompletion(callId: string, state: ShellState, exit: ShellStreamExit): ToolCompletion {
  const ok = exit.code === 0 && !exit.aborted;
  const common = {
    command: state.args.command,
    workingDirectory: exit.cwd || state.args.workingDirectory,
    // ShellStreamExit.code is uint32 while the results hold int32: reinterpret (4294967295 is exit -1).
    exitCode: exit.code | 0,
    stdout: state.stdout,
    stderr: state.stderr,
    interleavedOutput: state.output,
    outputLocation: exit.outputLocation,
    localExecutionTimeMs: exit.localExecutionTimeMs,
  };
  const result = create(ShellResultSchema, {
    result: ok
      ? { case: "success", value: common }
      : { case: "failure", value: { ...common, aborted: exit.aborted, abortReason: exit.abortReason } },
  });
  return { content: shellExitText(exit, state.output), isError: !ok, toolCall: card(callId, state.args, result) };
}

/** Backgrounded is a successful end of this call; the process keeps running on the client
 * (docs/protocol/cursor-tools.md §5.5). */
function backgroundedCompletion(callId: string, state: ShellState, bg: ShellStreamBackgrounded): ToolCompletion {
  const result = create(ShellResultSchema, {
    isBackground: true,
    terminalsFolder: state.terminalsFolder,
    pid: bg.pid,
    result: {
      case: "success",
      value: {
        command: bg.command || state.args.command,
        workingDirectory: bg.workingDirectory || state.args.workingDirectory,
        stdout: state.stdout,
        stderr: state.stderr,
        interleavedOutput: state.output,
        shellId: bg.shellId,
        pid: bg.pid,
        msToWait: bg.msToWait,
        backgroundReason: bg.reason,
      },
    },
  });
  const content = shellBackgroundedText(bg, state.terminalsFolder, state.output);
  return { content, isError: false, toolCall: card(callId, state.args, result) };
}

function refusedCompletion(callId: string, state: ShellState, event: ShellStream["event"]): ToolCompletion | undefined {
  const { command, workingDirectory } = state.args;
  let result: ShellResult;
  let content: string;
  switch (event.case) {
    case "rejected":
      result = create(ShellResultSchema, { result: { case: "rejected", value: event.value } });
      content = `Command was rejected${event.value.reason ? `: ${event.value.reason}` : "."}`;
      break;
    case "permissionDenied":
      result = create(ShellResultSchema, { result: { case: "permissionDenied", value: event.value } });
      content = `Permission denied running the command${event.value.error ? `: ${event.value.error}` : "."}`;
      break;
    case "sandboxUnsupported": {
      // ShellResult has no sandbox branch: the command could not be started, which is what spawn_error says.
      const why = [event.value.sandboxPolicyType, event.value.reason].filter(Boolean).join(": ");
      content = `The command could not run in the requested sandbox${why ? ` (${why})` : ""}.`;
      const spawnError = { command, workingDirectory, error: content };
      result = create(ShellResultSchema, { result: { case: "spawnError", value: spawnError } });
      break;
    }
    default:
      return undefined;
  }
  return { content, isError: true, toolCall: card(callId, state.args, result) };
}

function outputDelta(stream: "stdout" | "stderr", content: string) {
  return create(ToolCallDeltaSchema, {
    delta: { case: "shellToolCallDelta", value: { delta: { case: stream, value: { content } } } },
  });
}

function onStream(callId: string, state: ShellState, event: ShellStream["event"]): DriverStep<ShellState> {
  switch (event.case) {
    case "start":
    case "hookContext":
    case undefined:
      return { kind: "wait", state };
    case "stdout":
    case "stderr": {
      const data = event.value.data;
      const next = { ...state, [event.case]: state[event.case] + data, output: state.output + data };
      return { kind: "delta", delta: outputDelta(event.case, data), state: next };
    }
    case "exit":
      return { kind: "complete", completion: exitCompletion(callId, state, event.value), state };
    case "backgrounded":
      return { kind: "complete", completion: backgroundedCompletion(callId, state, event.value), state };
    default: {
      const completion = refusedCompletion(callId, state, event);
      if (!completion) return { kind: "protocol_error", message: `${NAME}: unknown shell_stream event` };
      return { kind: "complete", completion, state };
    }
  }
}

/** True when the completion left a shell running on the client: such an Exec must never be aborted
 * (docs/protocol/cursor-tools.md §5.5). */
export function isBackgroundedShell(completion: ToolCompletion): boolean {
  const tool = completion.toolCall.tool;
  return tool.case === "shellToolCall" && tool.value.result?.isBackground === true;
}

export const shellDriver: ToolDriver<ShellState> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call, ctx) {
    const parsed = parseOrInvalid(NAME, () => parseArgs(call.callId, call.args, ctx));
    return "invalid" in parsed ? parsed : { toolCall: card(call.callId, parsed.ok) };
  },
  begin(call, ctx: ToolContext): DriverStep<ShellState> {
    const parsed = parseOrInvalid(NAME, () => parseArgs(call.callId, call.args, ctx));
    if ("invalid" in parsed) return { kind: "protocol_error", message: parsed.invalid };
    const { terminalsFolder } = ctx;
    const state: ShellState = { args: parsed.ok, terminalsFolder, stdout: "", stderr: "", output: "" };
    return { kind: "exec", request: { case: "shellStreamArgs", value: parsed.ok }, state };
  },
  onExecMessage(call, state, message) {
    if (message.case !== "shellStream") return unexpectedMessage(NAME, "shellStream", message, state);
    return onStream(call.callId, state, message.value.event);
  },
};
