// Glob: the card is glob_tool_call but the Exec is a grep (docs/protocol/cursor-tools.md §5): grep_args with glob =
// glob_pattern, path = target_directory, output_mode "files_with_matches" and an empty pattern; grep_result is
// converted into GlobToolResult for the card.
import { create } from "@bufbuild/protobuf";
import {
  GlobToolArgsSchema,
  GlobToolResultSchema,
  GlobToolSuccessSchema,
  GrepArgsSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type {
  GlobToolArgs,
  GlobToolResult,
  GlobToolSuccess,
  GrepSuccess,
  GrepUnionResult,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalString, requiredString } from "./args.js";
import { globText } from "./result-text.js";
import { singleExecDriver } from "./single-exec.js";
import type { ToolCompletion } from "./types.js";
import { toolCall } from "./wire.js";

const NAME = "Glob";

function parseArgs(args: Record<string, unknown>): GlobToolArgs {
  return create(GlobToolArgsSchema, {
    globPattern: requiredString(args, "glob_pattern"),
    targetDirectory: optionalString(args, "target_directory"),
  });
}

function card(callId: string, args?: GlobToolArgs, result?: GlobToolResult) {
  return toolCall(callId, { case: "globToolCall", value: { args, result } });
}

interface FileList {
  files: string[];
  total: number;
  clientTruncated: boolean;
  ripgrepTruncated: boolean;
}

function truncation(r: { clientTruncated: boolean; ripgrepTruncated: boolean }) {
  return { clientTruncated: r.clientTruncated, ripgrepTruncated: r.ripgrepTruncated };
}

/** files_with_matches is asked for; a count or content answer still names files, so take those names. */
function filesOf(union: GrepUnionResult): FileList {
  const r = union.result;
  switch (r.case) {
    case "files":
      return { ...truncation(r.value), files: r.value.files, total: r.value.totalFiles };
    case "count":
      return { ...truncation(r.value), files: r.value.counts.map((c) => c.file), total: r.value.totalFiles };
    case "content": {
      const files = r.value.matches.map((m) => m.file);
      return { ...truncation(r.value), files, total: files.length };
    }
    case undefined:
      return { files: [], total: 0, clientTruncated: false, ripgrepTruncated: false };
  }
}

function globSuccessFromGrep(args: GlobToolArgs, success: GrepSuccess): GlobToolSuccess {
  const lists = Object.keys(success.workspaceResults)
    .sort()
    .map((root) => filesOf(success.workspaceResults[root]));
  const files = lists.flatMap((l) => l.files);
  return create(GlobToolSuccessSchema, {
    pattern: args.globPattern,
    path: success.path || (args.targetDirectory ?? ""),
    files,
    totalFiles: Math.max(
      files.length,
      lists.reduce((n, l) => n + l.total, 0),
    ),
    clientTruncated: lists.some((l) => l.clientTruncated),
    ripgrepTruncated: lists.some((l) => l.ripgrepTruncated),
  });
}

export const globDriver = singleExecDriver({
  name: NAME,
  parse: (call) => parseArgs(call.args),
  card: (callId, args) => card(callId, args),
  request: (call, args) => ({
    case: "grepArgs",
    value: create(GrepArgsSchema, {
      pattern: "",
      glob: args.globPattern,
      path: args.targetDirectory,
      outputMode: "files_with_matches",
      toolCallId: call.callId,
    }),
  }),
  resultCase: "grepResult",
  complete(call, args, grep): ToolCompletion | undefined {
    const r = grep.result;
    switch (r.case) {
      case "success": {
        const success = globSuccessFromGrep(args, r.value);
        const result = create(GlobToolResultSchema, { result: { case: "success", value: success } });
        return { content: globText(success), isError: false, toolCall: card(call.callId, args, result) };
      }
      case "error": {
        const result = create(GlobToolResultSchema, { result: { case: "error", value: { error: r.value.error } } });
        return { content: `Glob failed: ${r.value.error}`, isError: true, toolCall: card(call.callId, args, result) };
      }
      case undefined:
        return undefined;
    }
  },
});
