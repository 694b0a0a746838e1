// ReadLints: card read_lints_tool_call; DiagnosticsArgs carries one path, so every path the model gives is its own
// diagnostics_args Exec, one after the other, and the results are folded into one ReadLintsToolResult
// (docs/protocol/cursor-tools.md §5.7.2).
import { create } from "@bufbuild/protobuf";
import {
  DiagnosticSeverity,
  DiagnosticsArgsSchema,
  FileDiagnosticsSchema,
  ReadLintsToolArgsSchema,
  ReadLintsToolResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type {
  DiagnosticsResult,
  FileDiagnostics,
  ReadLintsToolArgs,
  ReadLintsToolResult,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { ArgsError, optionalStringArray, parseOrInvalid } from "./args.js";
import type { DriverStep, ExecRequest, ToolDriver, ToolInvocation } from "./types.js";
import { completed, toolCall, unexpectedMessage, wireName } from "./wire.js";

const NAME = "ReadLints";
/** One Exec per path: a bound on how many one call may send. */
export const MAX_LINT_PATHS = 50;

interface State {
  args: ReadLintsToolArgs;
  /** Index into args.paths of the Exec out now. */
  next: number;
  files: FileDiagnostics[];
  /** One line per path the client could not give diagnostics for. */
  failures: string[];
}

function parseArgs(args: Record<string, unknown>): ReadLintsToolArgs {
  const paths = optionalStringArray(args, "paths") ?? [];
  if (paths.length === 0) throw new ArgsError('"paths" needs at least one file or directory');
  if (paths.length > MAX_LINT_PATHS) throw new ArgsError(`"paths" may name at most ${MAX_LINT_PATHS} paths`);
  return create(ReadLintsToolArgsSchema, { paths });
}

function card(callId: string, args?: ReadLintsToolArgs, result?: ReadLintsToolResult) {
  return toolCall(callId, { case: "readLintsToolCall", value: { args, result } });
}

function request(call: ToolInvocation, path: string): ExecRequest {
  return { case: "diagnosticsArgs", value: create(DiagnosticsArgsSchema, { path, toolCallId: call.callId }) };
}

type Branch = Exclude<DiagnosticsResult["result"], { case: undefined }>;

/** The line the model reads for a path the client gave no diagnostics for. */
function failureLine(r: Exclude<Branch, { case: "success" }>, path: string): string {
  switch (r.case) {
    case "error":
      return `${r.value.path || path}: could not read diagnostics: ${r.value.error}`;
    case "rejected":
      return `${r.value.path || path}: reading diagnostics was rejected${r.value.reason ? `: ${r.value.reason}` : ""}`;
    case "fileNotFound":
      return `${r.value.path || path}: file not found`;
    case "permissionDenied":
      return `${r.value.path || path}: permission denied`;
  }
}

function fileDiagnostics(r: Extract<Branch, { case: "success" }>, path: string): FileDiagnostics {
  const diagnostics = r.value.diagnostics.map((d) => ({
    severity: d.severity,
    range: d.range && { start: d.range.start, end: d.range.end },
    message: d.message,
    source: d.source,
    code: d.code,
    isStale: d.isStale,
  }));
  return create(FileDiagnosticsSchema, {
    path: r.value.path || path,
    diagnostics,
    diagnosticsCount: Math.max(r.value.totalDiagnostics, diagnostics.length),
  });
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** Keyed by the client's enum value, which may be one this schema does not know ("diagnostic" then). */
const SEVERITY = new Map<DiagnosticSeverity, string>([
  [DiagnosticSeverity.ERROR, "error"],
  [DiagnosticSeverity.WARNING, "warning"],
  [DiagnosticSeverity.INFORMATION, "info"],
  [DiagnosticSeverity.HINT, "hint"],
]);

/** The model's view: each file with its diagnostics as `line:column severity [source code] message`. */
export function lintsText(files: FileDiagnostics[], failures: string[]): string {
  const blocks = files.map((f) => {
    if (f.diagnostics.length === 0) return `${f.path}: no diagnostics`;
    const lines = f.diagnostics.map((d) => {
      const at = d.range?.start ? `${d.range.start.line}:${d.range.start.column} ` : "";
      const origin = [d.source, d.code].filter((s) => s !== "").join(" ");
      const stale = d.isStale ? " (stale)" : "";
      return `  ${at}${SEVERITY.get(d.severity) ?? "diagnostic"}${origin ? ` [${origin}]` : ""} ${d.message}${stale}`;
    });
    const shown = f.diagnosticsCount > f.diagnostics.length ? ` (${f.diagnostics.length} shown)` : "";
    return [`${f.path}: ${count(f.diagnosticsCount, "diagnostic")}${shown}`, ...lines].join("\n");
  });
  return [...blocks, ...failures].join("\n");
}

function finish(call: ToolInvocation, state: State): DriverStep<State> {
  const { files, failures, args } = state;
  if (files.length === 0) {
    const errorMessage = lintsText([], failures);
    const typed = create(ReadLintsToolResultSchema, { result: { case: "error", value: { errorMessage } } });
    return completed(state, errorMessage, true, card(call.callId, args, typed));
  }
  const totalDiagnostics = files.reduce((n, f) => n + f.diagnosticsCount, 0);
  const value = { fileDiagnostics: files, totalFiles: files.length, totalDiagnostics };
  const typed = create(ReadLintsToolResultSchema, { result: { case: "success", value } });
  const summary = `${count(totalDiagnostics, "diagnostic")} in ${count(files.length, "file")}.`;
  return completed(state, `${lintsText(files, failures)}\n\n${summary}`, false, card(call.callId, args, typed));
}

export const readLintsDriver: ToolDriver<State> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(NAME, () => parseArgs(call.args));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok) };
  },
  begin(call): DriverStep<State> {
    const p = parseOrInvalid(NAME, () => parseArgs(call.args));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const state: State = { args: p.ok, next: 0, files: [], failures: [] };
    return { kind: "exec", request: request(call, p.ok.paths[0]!), state };
  },
  onExecMessage(call, state, message) {
    if (message.case !== "diagnosticsResult") return unexpectedMessage(NAME, "diagnosticsResult", message, state);
    const path = state.args.paths[state.next]!;
    const r = message.value.result;
    if (r.case === undefined)
      return { kind: "protocol_error", message: `${NAME}: ${wireName("diagnosticsResult")} has no result branch set` };
    const next: State =
      r.case === "success"
        ? { ...state, next: state.next + 1, files: [...state.files, fileDiagnostics(r, path)] }
        : { ...state, next: state.next + 1, failures: [...state.failures, failureLine(r, path)] };
    if (next.next < next.args.paths.length)
      return { kind: "exec", request: request(call, next.args.paths[next.next]!), state: next };
    return finish(call, next);
  },
};
