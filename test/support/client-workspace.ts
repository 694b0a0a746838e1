// The fake Cursor client's side of Exec: an in-memory workspace and a scripted shell. Each function answers one
// ExecServerMessage the way the real client does, with the typed result branch the tool expects
// (docs/protocol/cursor-tools.md §3.3, docs/protocol/cursor-tools.md §5, §5.5). The gateway never touches a disk
// itself; everything it learns comes from here.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { posix } from "node:path";
import {
  type DeleteResult,
  DeleteResultSchema,
  type ExecClientMessage,
  type ExecServerMessage,
  type GrepArgs,
  type GrepResult,
  GrepResultSchema,
  type GrepUnionResult,
  GrepUnionResultSchema,
  type LsDirectoryTreeNode,
  LsDirectoryTreeNodeSchema,
  type LsResult,
  LsResultSchema,
  type ReadResult,
  ReadResultSchema,
  type ShellArgs,
  ShellStreamSchema,
  type WriteArgs,
  type WriteResult,
  WriteResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";

export interface Workspace {
  root: string;
  /** Absolute path → file text. */
  files: Map<string, string>;
}

/** Relative keys are placed under `root`. */
export function createWorkspace(files: Record<string, string> = {}, root = "/workspace"): Workspace {
  const workspace: Workspace = { root, files: new Map() };
  for (const [path, text] of Object.entries(files)) workspace.files.set(resolvePath(workspace, path), text);
  return workspace;
}

export interface ShellStep {
  stdout?: string;
  stderr?: string;
  exit?: number;
  /** Terminal: the client moved the process to the background (docs/protocol/cursor-tools.md §5.5). */
  backgrounded?: boolean;
  /** The command never finishes: no terminal event is ever sent (until the server aborts it). */
  never?: boolean;
  /** Wait before sending this step. */
  delayMs?: number;
}

export type ShellScript = (command: string, args: ShellArgs) => ShellStep[];

/** Commands nobody scripted fail like an unknown command would, so a test notices. */
export const unscriptedShell: ShellScript = (command) => [
  { stderr: `fake shell: no script for: ${command}\n`, exit: 127 },
];

export type ExecResultMessage = ExecClientMessage["message"];

export interface ExecAnswer {
  /** Client messages for this Exec id, in order, each optionally after a delay. */
  messages: Array<{ message: ExecResultMessage; delayMs?: number }>;
  /** False when the answer stops before a terminal result (a shell that never finishes). */
  terminal: boolean;
}

/** Undefined when the fake client does not implement that Exec branch. */
export function answerExec(exec: ExecServerMessage, workspace: Workspace, shell: ShellScript): ExecAnswer | undefined {
  const m = exec.message;
  const one = (message: ExecResultMessage): ExecAnswer => ({ messages: [{ message }], terminal: true });
  switch (m.case) {
    case "readArgs":
      return one({ case: "readResult", value: read(workspace, m.value.path, m.value.offset, m.value.limit) });
    case "writeArgs":
      return one({ case: "writeResult", value: write(workspace, m.value) });
    case "deleteArgs":
      return one({ case: "deleteResult", value: remove(workspace, m.value.path) });
    case "grepArgs":
      return one({ case: "grepResult", value: grep(workspace, m.value) });
    case "lsArgs":
      return one({ case: "lsResult", value: ls(workspace, m.value.path) });
    case "shellStreamArgs":
      return runShell(m.value, shell);
    default:
      return undefined;
  }
}

export function resolvePath(workspace: Workspace, path: string): string {
  return posix.isAbsolute(path) ? posix.normalize(path) : posix.join(workspace.root, path);
}

function read(workspace: Workspace, path: string, offset?: number, limit?: number): ReadResult {
  const text = workspace.files.get(resolvePath(workspace, path));
  if (text === undefined) return create(ReadResultSchema, { result: { case: "fileNotFound", value: { path } } });
  const lines = text.split("\n");
  const rangeApplied = offset !== undefined || limit !== undefined;
  // offset is 1-based like the Read tool's line numbers.
  const start = Math.max((offset ?? 1) - 1, 0);
  const content = rangeApplied ? lines.slice(start, limit === undefined ? undefined : start + limit).join("\n") : text;
  return create(ReadResultSchema, {
    result: {
      case: "success",
      value: {
        path,
        output: { case: "content", value: content },
        totalLines: lines.length,
        fileSize: BigInt(Buffer.byteLength(text)),
        rangeApplied,
      },
    },
  });
}

function write(workspace: Workspace, args: WriteArgs): WriteResult {
  const text =
    args.fileText !== "" || args.fileBytes.byteLength === 0
      ? args.fileText
      : Buffer.from(args.fileBytes).toString("utf8");
  workspace.files.set(resolvePath(workspace, args.path), text);
  return create(WriteResultSchema, {
    result: {
      case: "success",
      value: {
        path: args.path,
        linesCreated: text.split("\n").length,
        fileSize: Buffer.byteLength(text),
        fileContentAfterWrite: args.returnFileContentAfterWrite ? text : undefined,
      },
    },
  });
}

function remove(workspace: Workspace, path: string): DeleteResult {
  const key = resolvePath(workspace, path);
  const text = workspace.files.get(key);
  if (text === undefined) return create(DeleteResultSchema, { result: { case: "fileNotFound", value: { path } } });
  workspace.files.delete(key);
  return create(DeleteResultSchema, {
    result: {
      case: "success",
      value: { path, deletedFile: key, fileSize: BigInt(Buffer.byteLength(text)), prevContent: text },
    },
  });
}

function grep(workspace: Workspace, args: GrepArgs): GrepResult {
  const scope = resolvePath(workspace, args.path ?? workspace.root);
  const matcher = lineMatcher(args.pattern, args.caseInsensitive === true);
  const globRe = args.glob ? globToRegExp(args.glob) : undefined;
  const files = [...workspace.files.keys()]
    .filter((file) => file === scope || file.startsWith(scope.endsWith("/") ? scope : `${scope}/`))
    .filter(
      (file) =>
        globRe === undefined ||
        globRe.test(args.glob!.includes("/") ? posix.relative(scope, file) : posix.basename(file)),
    )
    .sort();
  const matched = files
    .map((file) => ({
      file,
      lines: workspace.files
        .get(file)!
        .split("\n")
        .map((content, i) => ({ lineNumber: i + 1, content }))
        .filter((line) => matcher(line.content)),
    }))
    .filter((f) => f.lines.length > 0);
  const mode = args.outputMode ?? "content";
  return create(GrepResultSchema, {
    result: {
      case: "success",
      value: {
        pattern: args.pattern,
        path: args.path ?? "",
        outputMode: mode,
        workspaceResults: { [workspace.root]: grepUnion(mode, matched) },
      },
    },
  });
}

function grepUnion(
  mode: string,
  matched: Array<{ file: string; lines: Array<{ lineNumber: number; content: string }> }>,
): GrepUnionResult {
  if (mode === "files_with_matches") {
    return create(GrepUnionResultSchema, {
      result: { case: "files", value: { files: matched.map((f) => f.file), totalFiles: matched.length } },
    });
  }
  if (mode === "count") {
    const counts = matched.map((f) => ({ file: f.file, count: f.lines.length }));
    const totalMatches = counts.reduce((n, c) => n + c.count, 0);
    return create(GrepUnionResultSchema, {
      result: { case: "count", value: { counts, totalFiles: matched.length, totalMatches } },
    });
  }
  const totalMatchedLines = matched.reduce((n, f) => n + f.lines.length, 0);
  return create(GrepUnionResultSchema, {
    result: {
      case: "content",
      value: {
        matches: matched.map((f) => ({ file: f.file, matches: f.lines })),
        totalLines: totalMatchedLines,
        totalMatchedLines,
      },
    },
  });
}

function ls(workspace: Workspace, path: string): LsResult {
  const dir = resolvePath(workspace, path);
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  const inside = [...workspace.files.keys()]
    .filter((file) => file.startsWith(prefix))
    .map((file) => file.slice(prefix.length));
  if (inside.length === 0)
    return create(LsResultSchema, { result: { case: "error", value: { path, error: `no such directory: ${path}` } } });
  return create(LsResultSchema, { result: { case: "success", value: { directoryTreeRoot: treeNode(dir, inside) } } });
}

function treeNode(absPath: string, relativeFiles: string[]): LsDirectoryTreeNode {
  const subdirs = new Map<string, string[]>();
  const names: string[] = [];
  for (const rel of relativeFiles) {
    const slash = rel.indexOf("/");
    if (slash < 0) names.push(rel);
    else subdirs.set(rel.slice(0, slash), [...(subdirs.get(rel.slice(0, slash)) ?? []), rel.slice(slash + 1)]);
  }
  return create(LsDirectoryTreeNodeSchema, {
    absPath,
    childrenFiles: names.sort().map((name) => ({ name })),
    childrenDirs: [...subdirs.keys()].sort().map((name) => treeNode(posix.join(absPath, name), subdirs.get(name)!)),
    childrenWereProcessed: true,
    numFiles: relativeFiles.length,
  });
}

function runShell(args: ShellArgs, shell: ShellScript): ExecAnswer {
  const messages: ExecAnswer["messages"] = [{ message: shellEvent({ case: "start", value: {} }) }];
  for (const step of shell(args.command, args)) {
    let delayMs = step.delayMs;
    const push = (event: ShellEvent): void => {
      messages.push({ message: shellEvent(event), delayMs });
      delayMs = undefined; // the delay applies once, before the step's first event
    };
    if (step.stdout !== undefined) push({ case: "stdout", value: { data: step.stdout } });
    if (step.stderr !== undefined) push({ case: "stderr", value: { data: step.stderr } });
    if (step.never) return { messages, terminal: false };
    if (step.backgrounded) {
      push({
        case: "backgrounded",
        value: { shellId: 1, command: args.command, workingDirectory: args.workingDirectory, pid: 4242 },
      });
      return { messages, terminal: true };
    }
    if (step.exit !== undefined) {
      push({ case: "exit", value: { code: step.exit, cwd: args.workingDirectory, aborted: false } });
      return { messages, terminal: true };
    }
  }
  messages.push({
    message: shellEvent({ case: "exit", value: { code: 0, cwd: args.workingDirectory, aborted: false } }),
  });
  return { messages, terminal: true };
}

type ShellEvent = NonNullable<MessageInitShape<typeof ShellStreamSchema>["event"]>;

function shellEvent(event: ShellEvent): ExecResultMessage {
  return { case: "shellStream", value: create(ShellStreamSchema, { event }) };
}

function lineMatcher(pattern: string, caseInsensitive: boolean): (line: string) => boolean {
  if (pattern === "") return () => true;
  try {
    const re = new RegExp(pattern, caseInsensitive ? "i" : "");
    return (line) => re.test(line);
  } catch {
    const needle = caseInsensitive ? pattern.toLowerCase() : pattern;
    return (line) => (caseInsensitive ? line.toLowerCase() : line).includes(needle);
  }
}

/** Enough of ripgrep's glob syntax for tests: `**`, `*`, `?`, `{a,b}`. */
function globToRegExp(glob: string): RegExp {
  let re = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*" && glob[i + 1] === "*") {
      re += glob[i + 2] === "/" ? "(?:.*/)?" : ".*";
      i += glob[i + 2] === "/" ? 2 : 1;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "{") braces++, (re += "(?:");
    else if (c === "}" && braces > 0) braces--, (re += ")");
    else if (c === "," && braces > 0) re += "|";
    else re += c.replace(/[.+^$()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}
