// AwaitShell: card await_tool_call (docs/protocol/cursor-tools.md §5.13). The protocol has no Exec for it, and the
// gateway never touches a disk, so it really waits through the client: it reads the backgrounded shell's terminal
// file (<terminals folder>/<shell id>.txt) with hidden read_args on the same tool_call_id, pausing between looks,
// until the pattern matches the output, the file's header shows an exit code, or the time budget is spent. Between
// two looks it pauses DRIVER_PAUSE_MS (the ToolCall machine holds the timer; the driver stays pure).
import { create } from "@bufbuild/protobuf";
import { AwaitArgsSchema, AwaitResultSchema, ReadArgsSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { AwaitArgs, AwaitResult, ReadResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { ArgsError, optionalInteger, optionalString, parseOrInvalid } from "./args.js";
import {
  DRIVER_PAUSE_MS,
  type DriverStep,
  type ToolCompletion,
  type ToolDriver,
  type ToolInvocation,
} from "./types.js";
import { toolCall, unexpectedMessage } from "./wire.js";

const NAME = "AwaitShell";
const DEFAULT_BLOCK_UNTIL_MS = 30_000;
/** The longest wait one call may ask for; longer waits are several calls (a bound on a held tool round). */
const MAX_BLOCK_UNTIL_MS = 600_000;
const SHELL_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** The most output the model is shown (the end of it), so one answer stays a bounded message. */
const MAX_OUTPUT_CHARS = 20_000;

interface Parsed {
  shellId: string;
  blockUntilMs: number;
  pattern?: RegExp;
}

interface AwaitState {
  args: Parsed;
  path: string;
  /** Time spent pausing, counting a pause once it is asked for: the budget is measured in whole pauses, so a wait
   * lasts at least block_until_ms (rounded up to the next pause) and a slow read never cuts it short. */
  waitedMs: number;
}

function parseArgs(args: Record<string, unknown>): Parsed {
  const shellId = optionalString(args, "shell_id");
  if (!shellId) throw new ArgsError('"shell_id" is required: the id a backgrounded Shell call reported');
  // The id names a file in the terminals folder: never a path of its own.
  if (!SHELL_ID.test(shellId)) throw new ArgsError(`"shell_id" must be a shell id such as "3", got "${shellId}"`);
  const blockUntilMs = optionalInteger(args, "block_until_ms", 0, MAX_BLOCK_UNTIL_MS) ?? DEFAULT_BLOCK_UNTIL_MS;
  const source = optionalString(args, "pattern");
  let pattern: RegExp | undefined;
  if (source) {
    try {
      pattern = new RegExp(source, "m");
    } catch (err) {
      throw new ArgsError(`"pattern" is not a valid regular expression: ${(err as Error).message}`);
    }
  }
  return { shellId, blockUntilMs, ...(pattern ? { pattern } : {}) };
}

function cardArgs(p: Parsed): AwaitArgs {
  return create(AwaitArgsSchema, { taskId: p.shellId, blockUntilMs: p.blockUntilMs, regex: p.pattern?.source });
}

function card(callId: string, args?: AwaitArgs, result?: AwaitResult) {
  return toolCall(callId, { case: "awaitToolCall", value: { args, result } });
}

/** A terminal file: a `---` header of `key: value` lines (pid, cwd, last_command, last_exit_code), then the output. */
export function readTerminalFile(text: string): { exitCode?: number; output: string } {
  const header = /^---\n([\s\S]*?)\n---\n?/.exec(text);
  if (!header) return { output: text };
  const exit = /^last_exit_code:\s*(-?\d+)\s*$/m.exec(header[1]!);
  return { ...(exit ? { exitCode: Number(exit[1]) } : {}), output: text.slice(header[0].length) };
}

const tail = (output: string) =>
  output.length > MAX_OUTPUT_CHARS ? `[…]${output.slice(output.length - MAX_OUTPUT_CHARS)}` : output;

function finished(call: ToolInvocation, state: AwaitState, text: string): DriverStep<AwaitState> {
  const { shellId, pattern } = state.args;
  const { exitCode, output } = readTerminalFile(text);
  const match = pattern?.exec(output)?.[0];
  const common = {
    taskId: shellId,
    runtimeMs: BigInt(state.waitedMs),
    outputFilePath: state.path,
    outputLength: BigInt(output.length),
    regexRequested: pattern !== undefined,
    ...(match !== undefined ? { regexMatch: match } : {}),
  };
  const seconds = `${(state.waitedMs / 1000).toFixed(1)} s`;
  let result: AwaitResult;
  let lead: string;
  if (match !== undefined || exitCode !== undefined) {
    result = create(AwaitResultSchema, { result: { case: "complete", value: { ...common, exitCode } } });
    lead =
      match !== undefined
        ? `The output of shell ${shellId} matched /${pattern!.source}/ after ${seconds}: ${JSON.stringify(match)}.`
        : `Shell ${shellId} exited with code ${exitCode} (waited ${seconds}).`;
  } else if (state.waitedMs >= state.args.blockUntilMs) {
    result = create(AwaitResultSchema, { result: { case: "stillRunning", value: common } });
    lead = `Shell ${shellId} is still running after ${seconds}${pattern ? `; /${pattern.source}/ has not matched` : ""}.`;
  } else {
    return { kind: "pause", state: { ...state, waitedMs: state.waitedMs + DRIVER_PAUSE_MS } };
  }
  const content = `${lead} Output file: ${state.path}\n\n${tail(output) || "(no output yet)"}`;
  return {
    kind: "complete",
    completion: { content, isError: false, toolCall: card(call.callId, cardArgs(state.args), result) },
    state,
  };
}

function errorCompletion(call: ToolInvocation, args: Parsed, message: string): ToolCompletion {
  const result = create(AwaitResultSchema, { result: { case: "error", value: { error: message } } });
  return { content: message, isError: true, toolCall: card(call.callId, cardArgs(args), result) };
}

function onRead(call: ToolInvocation, state: AwaitState, r: ReadResult["result"]): DriverStep<AwaitState> {
  const { shellId } = state.args;
  const fail = (message: string): DriverStep<AwaitState> => ({
    kind: "complete",
    completion: errorCompletion(call, state.args, message),
    state,
  });
  switch (r.case) {
    case "success":
      if (r.value.output.case !== "content") return fail(`The terminal file of shell ${shellId} is not text.`);
      return finished(call, state, r.value.output.value);
    case "fileNotFound":
      return fail(`No shell ${shellId}: ${state.path} does not exist. Use the shell id a backgrounded Shell reported.`);
    case "error":
      return fail(`Reading the terminal file of shell ${shellId} failed: ${r.value.error}`);
    case "rejected":
    case "permissionDenied":
    case "invalidFile":
      return fail(`The terminal file of shell ${shellId} could not be read (${r.case}).`);
    case undefined:
      return { kind: "protocol_error", message: `${NAME}: read_result has no result branch set` };
  }
}

const look = (call: ToolInvocation, state: AwaitState): DriverStep<AwaitState> => ({
  kind: "exec",
  request: { case: "readArgs", value: create(ReadArgsSchema, { path: state.path, toolCallId: call.callId }) },
  state,
});

export const awaitShellDriver: ToolDriver<AwaitState> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(NAME, () => parseArgs(call.args));
    return "invalid" in p ? p : { toolCall: card(call.callId, cardArgs(p.ok)) };
  },
  begin(call, ctx): DriverStep<AwaitState> {
    const p = parseOrInvalid(NAME, () => parseArgs(call.args));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const state: AwaitState = { args: p.ok, path: `${ctx.terminalsFolder}/${p.ok.shellId}.txt`, waitedMs: 0 };
    if (!ctx.terminalsFolder) {
      const message = "The client did not say where its terminals folder is, so no shell can be awaited.";
      return { kind: "complete", completion: errorCompletion(call, p.ok, message), state };
    }
    return look(call, state);
  },
  onExecMessage(call, state, message) {
    if (message.case !== "readResult") return unexpectedMessage(NAME, "readResult", message, state);
    return onRead(call, state, message.value.result);
  },
  onResume: look,
};
