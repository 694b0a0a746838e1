// The fake Cursor client's answers for the Execs the workspace alone cannot give (docs/protocol/cursor-tools.md §5.7,
// §5.9): editor diagnostics per file and fetched web pages. Each is an onExec hook that answers its own branch with
// the typed result the real client sends and leaves every other Exec to the workspace.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type DiagnosticSchema,
  DiagnosticsResultSchema,
  type ExecServerMessage,
  FetchResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecPlan, RunHooks } from "./client-responder.js";

export type DiagnosticInit = MessageInitShape<typeof DiagnosticSchema>;
export interface PageInit {
  content: string;
  statusCode?: number;
  contentType?: string;
}

/** diagnostics_args: the path's diagnostics, or file_not_found for a path the editor does not know. */
export function diagnosticsAnswer(exec: ExecServerMessage, byPath: ReadonlyMap<string, DiagnosticInit[]>): ExecPlan {
  if (exec.message.case !== "diagnosticsArgs") return {};
  const { path } = exec.message.value;
  const diagnostics = byPath.get(path);
  const result = create(DiagnosticsResultSchema, {
    result: diagnostics
      ? { case: "success", value: { path, diagnostics, totalDiagnostics: diagnostics.length } }
      : { case: "fileNotFound", value: { path } },
  });
  return { result: { case: "diagnosticsResult", value: result } };
}

/** fetch_args: the page at the url, or a fetch error naming it. */
export function fetchAnswer(exec: ExecServerMessage, pages: ReadonlyMap<string, PageInit>): ExecPlan {
  if (exec.message.case !== "fetchArgs") return {};
  const { url } = exec.message.value;
  const page = pages.get(url);
  const result = create(FetchResultSchema, {
    result: page
      ? { case: "success", value: { url, ...page } }
      : { case: "error", value: { url, error: `fake client: no page at ${url}` } },
  });
  return { result: { case: "fetchResult", value: result } };
}

/** Hooks answering diagnostics and fetches from the given tables. */
export function execToolHooks(tables: {
  diagnostics?: ReadonlyMap<string, DiagnosticInit[]>;
  pages?: ReadonlyMap<string, PageInit>;
}): Pick<RunHooks, "onExec"> {
  return {
    onExec: (exec) => ({
      ...diagnosticsAnswer(exec, tables.diagnostics ?? new Map()),
      ...fetchAnswer(exec, tables.pages ?? new Map()),
    }),
  };
}
