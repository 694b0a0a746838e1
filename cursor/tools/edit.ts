// Write, StrReplace and EditNotebook (docs/protocol/cursor-tools.md §5.6): card edit_tool_call; live stream_content
// deltas while the arguments stream; then a hidden read_args, the change computed here on LF text, a hidden
// write_args with the whole new text, and an EditResult built from before/after. Each hidden phase is its own Exec;
// the machine gives each a new id and both carry the same tool_call_id.
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  EditArgsSchema,
  EditResultSchema,
  ReadArgsSchema,
  ToolCallDeltaSchema,
  WriteArgsSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { EditArgs, EditResult, ReadResult, WriteResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalBoolean, parseOrInvalid, requiredBoolean, requiredInteger, requiredString } from "./args.js";
import { LfStream, diffStats, normalizeLf, replaceExact } from "./edit-text.js";
import { JsonStringPropertyStream } from "./json-stream.js";
import { applyNotebookEdit, type NotebookEdit } from "./notebook.js";
import { editSuccessText } from "./result-text.js";
import type { ArgsStreamer, DriverStep, ToolDriver, ToolInvocation } from "./types.js";
import { completed, toolCall, unexpectedMessage } from "./wire.js";

type EditPlan =
  | { tool: "Write"; path: string; contents: string }
  | { tool: "StrReplace"; path: string; oldString: string; newString: string; replaceAll: boolean }
  | ({ tool: "EditNotebook" } & NotebookEdit);

export type EditState =
  | { phase: "read"; plan: EditPlan }
  | { phase: "write"; plan: EditPlan; before: string; after: string; created: boolean };

type EditResultInit = MessageInitShape<typeof EditResultSchema>["result"];

/** What the hidden read says about "before": LF text, no file, or a reason to stop without writing. */
type Before = { kind: "text"; text: string; truncated: boolean } | { kind: "missing" } | Failed;

type Failed = { kind: "failed"; content: string; result: EditResultInit };
type Applied = { before: string; after: string; created: boolean };

function streamContent(plan: EditPlan): string {
  return normalizeLf(plan.tool === "Write" ? plan.contents : plan.newString);
}

function card(callId: string, args?: EditArgs, result?: EditResult) {
  return toolCall(callId, { case: "editToolCall", value: { args, result } });
}

function cardArgs(plan: EditPlan): EditArgs {
  return create(EditArgsSchema, { path: plan.path, streamContent: streamContent(plan) });
}

function failed(path: string, content: string): Failed {
  const value = { path, error: content, modelVisibleError: content };
  return { kind: "failed", content, result: { case: "error", value } };
}

function beforeFrom(read: ReadResult, path: string): Before | undefined {
  const r = read.result;
  switch (r.case) {
    case "success":
      if (r.value.output.case !== "content") return failed(path, `Cannot edit ${path}: it is not a text file.`);
      return { kind: "text", text: normalizeLf(r.value.output.value), truncated: r.value.truncated };
    case "fileNotFound":
      return { kind: "missing" };
    case "permissionDenied": {
      const content = `Permission denied reading ${path}.`;
      return { kind: "failed", content, result: { case: "readPermissionDenied", value: { path } } };
    }
    case "rejected": {
      const content = `Editing ${path} was rejected${r.value.reason ? `: ${r.value.reason}` : "."}`;
      return { kind: "failed", content, result: { case: "rejected", value: { path, reason: r.value.reason } } };
    }
    case "error":
      return failed(path, `Cannot edit ${path}: reading it failed: ${r.value.error}`);
    case "invalidFile":
      return failed(path, `Cannot edit ${path}: ${r.value.reason || "invalid file"}.`);
    case undefined:
      return undefined;
  }
}

/** The new text, or why there is none. Write: a missing file is an empty "before" (docs/protocol/cursor-tools.md §5.6).
 * */
function applyPlan(plan: EditPlan, before: Before, callId: string): Applied | Failed {
  if (before.kind === "failed") return before;
  if (plan.tool === "Write") {
    const text = before.kind === "text" ? before.text : "";
    return { before: text, after: normalizeLf(plan.contents), created: before.kind === "missing" };
  }
  const { path } = plan;
  if (before.kind === "missing") {
    return { kind: "failed", content: `File not found: ${path}`, result: { case: "fileNotFound", value: { path } } };
  }
  // Replacing inside a partial read and writing it back would cut the file short.
  if (before.truncated) return failed(path, `Cannot edit ${path}: the client returned only part of the file.`);
  if (plan.tool === "EditNotebook") {
    const edited = applyNotebookEdit(before.text, plan, callId);
    if (!edited.ok) return failed(path, `Cannot edit ${path}: ${edited.error}.`);
    return { before: before.text, after: edited.after, created: false };
  }
  const replaced = replaceExact(before.text, plan.oldString, plan.newString, plan.replaceAll);
  if (replaced.ok) return { before: before.text, after: replaced.after, created: false };
  switch (replaced.reason) {
    case "empty_old_string":
      return failed(path, "old_string must not be empty.");
    case "not_found":
      return failed(
        path,
        `old_string was not found in ${path}. It must match the file exactly, including whitespace and indentation.`,
      );
    case "ambiguous":
      return failed(
        path,
        `old_string occurs ${replaced.occurrences} times in ${path}. ` +
          "Include more surrounding context to make it unique, or set replace_all to true.",
      );
  }
}

function writeOutcome(w: WriteResult, path: string): { content: string; result: EditResultInit } | undefined {
  const r = w.result;
  switch (r.case) {
    case "permissionDenied": {
      const content = `Permission denied writing ${path}${r.value.error ? `: ${r.value.error}` : "."}`;
      const value = { path, error: r.value.error, isReadonly: r.value.isReadonly };
      return { content, result: { case: "writePermissionDenied", value } };
    }
    case "noSpace": {
      const content = `Cannot write ${path}: no space left on device.`;
      return { content, result: { case: "error", value: { path, error: content, modelVisibleError: content } } };
    }
    case "error": {
      const content = `Error writing ${path}: ${r.value.error}`;
      return { content, result: { case: "error", value: { path, error: r.value.error, modelVisibleError: content } } };
    }
    case "rejected": {
      const content = `Writing ${path} was rejected${r.value.reason ? `: ${r.value.reason}` : "."}`;
      return { content, result: { case: "rejected", value: { path, reason: r.value.reason } } };
    }
    case "success":
    case undefined:
      return undefined;
  }
}

function complete(
  call: ToolInvocation,
  state: EditState,
  content: string,
  isError: boolean,
  result: EditResultInit,
): DriverStep<EditState> {
  const typed = create(EditResultSchema, { result });
  return completed(state, content, isError, card(call.callId, cardArgs(state.plan), typed));
}

function onRead(call: ToolInvocation, state: EditState & { phase: "read" }, read: ReadResult): DriverStep<EditState> {
  const before = beforeFrom(read, state.plan.path);
  if (!before) return { kind: "protocol_error", message: `${state.plan.tool}: read_result has no result branch set` };
  const applied = applyPlan(state.plan, before, call.callId);
  if ("kind" in applied) return complete(call, state, applied.content, true, applied.result);
  const request = create(WriteArgsSchema, { path: state.plan.path, fileText: applied.after, toolCallId: call.callId });
  const next: EditState = { ...applied, phase: "write", plan: state.plan };
  return { kind: "exec", request: { case: "writeArgs", value: request }, state: next };
}

function onWrite(
  call: ToolInvocation,
  state: EditState & { phase: "write" },
  write: WriteResult,
): DriverStep<EditState> {
  const { path } = state.plan;
  if (write.result.case === "success") {
    const stats = diffStats(path, state.before, state.after);
    const content = editSuccessText(path, state.created, stats.linesAdded, stats.linesRemoved);
    return complete(call, state, content, false, {
      case: "success",
      value: {
        path,
        linesAdded: stats.linesAdded,
        linesRemoved: stats.linesRemoved,
        diffString: stats.diff,
        beforeFullFileContent: state.before,
        afterFullFileContent: state.after,
      },
    });
  }
  const failure = writeOutcome(write, path);
  if (!failure) return { kind: "protocol_error", message: `${state.plan.tool}: write_result has no result branch set` };
  return complete(call, state, failure.content, true, failure.result);
}

/** Live projection (docs/protocol/cursor-tools.md §5.6): content deltas right away, not held back until path is known.
 * */
function editArgsStreamer(callId: string, streamKey: string, pathKey: string): ArgsStreamer {
  const json = new JsonStringPropertyStream(streamKey, [pathKey]);
  const lf = new LfStream();
  let pathSent = false;
  return {
    push(jsonDelta) {
      const out: ReturnType<ArgsStreamer["push"]> = [];
      const emit = (text: string) => {
        if (text === "") return;
        const value = { streamContentDelta: text };
        out.push({
          kind: "delta",
          delta: create(ToolCallDeltaSchema, { delta: { case: "editToolCallDelta", value } }),
        });
      };
      for (const event of json.push(jsonDelta)) {
        if (event.kind === "text") emit(lf.push(event.text));
        else if (event.kind === "text_end") emit(lf.end());
        else if (!pathSent) {
          pathSent = true;
          out.push({ kind: "partial", toolCall: card(callId, create(EditArgsSchema, { path: event.value })) });
        }
      }
      return out;
    },
  };
}

function editDriver(
  name: EditPlan["tool"],
  keys: { stream: string; path: string },
  parse: (args: Record<string, unknown>) => EditPlan,
): ToolDriver<EditState> {
  return {
    name,
    placeholder: (callId) => card(callId),
    argsStreamer: (callId) => editArgsStreamer(callId, keys.stream, keys.path),
    started(call) {
      const parsed = parseOrInvalid(name, () => parse(call.args));
      return "invalid" in parsed ? parsed : { toolCall: card(call.callId, cardArgs(parsed.ok)) };
    },
    begin(call) {
      const parsed = parseOrInvalid(name, () => parse(call.args));
      if ("invalid" in parsed) return { kind: "protocol_error", message: parsed.invalid };
      const request = create(ReadArgsSchema, { path: parsed.ok.path, toolCallId: call.callId });
      return { kind: "exec", request: { case: "readArgs", value: request }, state: { phase: "read", plan: parsed.ok } };
    },
    onExecMessage(call, state, message) {
      if (state.phase === "read") {
        if (message.case !== "readResult") return unexpectedMessage(name, "readResult", message, state);
        return onRead(call, state, message.value);
      }
      if (message.case !== "writeResult") return unexpectedMessage(name, "writeResult", message, state);
      return onWrite(call, state, message.value);
    },
  };
}

export const writeDriver = editDriver("Write", { stream: "contents", path: "path" }, (args) => ({
  tool: "Write",
  path: requiredString(args, "path"),
  contents: requiredString(args, "contents"),
}));

export const strReplaceDriver = editDriver("StrReplace", { stream: "new_string", path: "path" }, (args) => ({
  tool: "StrReplace",
  path: requiredString(args, "path"),
  oldString: requiredString(args, "old_string"),
  newString: requiredString(args, "new_string"),
  replaceAll: optionalBoolean(args, "replace_all") ?? false,
}));

export const editNotebookDriver = editDriver(
  "EditNotebook",
  { stream: "new_string", path: "target_notebook" },
  (args) => ({
    tool: "EditNotebook",
    path: requiredString(args, "target_notebook"),
    cellIdx: requiredInteger(args, "cell_idx", 0),
    isNewCell: requiredBoolean(args, "is_new_cell"),
    cellLanguage: requiredString(args, "cell_language"),
    oldString: requiredString(args, "old_string"),
    newString: requiredString(args, "new_string"),
  }),
);
