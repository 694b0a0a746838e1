// Canonical string results (docs/protocol/cursor-run.md §8.4): the one String that the store and every provider see for
// a typed Cursor result. Each renderer is a pure function of the typed value, so the same result always gives the same
// bytes (prefix stability across replays).
import { ShellAbortReason, ShellBackgroundReason } from "../../proto/gen/agent/v1/agent_pb.js";
import type {
  GlobToolSuccess,
  GrepContentResult,
  GrepCountResult,
  GrepFilesResult,
  GrepSuccess,
  GrepUnionResult,
  LsDirectoryTreeNode,
  OutputLocation,
  ShellStreamBackgrounded,
  ShellStreamExit,
} from "../../proto/gen/agent/v1/agent_pb.js";

// ---- Grep / Glob -------------------------------------------------------------------------------------------

export function grepText(success: GrepSuccess): string {
  const roots = Object.keys(success.workspaceResults).sort();
  if (roots.length === 0) {
    return success.activeEditorResult ? grepUnionText(success.activeEditorResult) : "No matches found.";
  }
  if (roots.length === 1) return grepUnionText(success.workspaceResults[roots[0]]);
  return roots.map((root) => `Workspace ${root}:\n${grepUnionText(success.workspaceResults[root])}`).join("\n\n");
}

function grepUnionText(union: GrepUnionResult): string {
  switch (union.result.case) {
    case "files":
      return filesText(union.result.value);
    case "count":
      return countText(union.result.value);
    case "content":
      return contentText(union.result.value);
    case undefined:
      return "No matches found.";
  }
}

interface Truncation {
  clientTruncated: boolean;
  ripgrepTruncated: boolean;
  headLimitApplied?: number;
  offsetApplied?: number;
}

function truncationNote(r: Truncation): string[] {
  const notes: string[] = [];
  if (r.clientTruncated || r.ripgrepTruncated) notes.push("[results truncated]");
  if (r.headLimitApplied !== undefined) notes.push(`[head_limit ${r.headLimitApplied} applied]`);
  if (r.offsetApplied !== undefined) notes.push(`[offset ${r.offsetApplied} applied]`);
  return notes;
}

function filesText(r: GrepFilesResult): string {
  if (r.files.length === 0) return "No files found.";
  return [...r.files, ...truncationNote(r)].join("\n");
}

function countText(r: GrepCountResult): string {
  if (r.counts.length === 0) return "No matches found.";
  const lines = r.counts.map((c) => `${c.file}:${c.count}`);
  lines.push(`${r.totalMatches} matches in ${r.totalFiles} files`);
  return [...lines, ...truncationNote(r)].join("\n");
}

function contentText(r: GrepContentResult): string {
  if (r.matches.length === 0) return "No matches found.";
  const blocks = r.matches.map((fileMatch) => {
    const lines = [fileMatch.file];
    let previous: number | undefined;
    for (const m of fileMatch.matches) {
      // ripgrep's convention: ":" marks a matching line, "-" a context line, "--" a gap between groups.
      if (previous !== undefined && m.lineNumber > previous + 1) lines.push("--");
      const mark = m.isContextLine ? "-" : ":";
      lines.push(`${m.lineNumber}${mark}${m.content}${m.contentTruncated ? " [line truncated]" : ""}`);
      previous = m.lineNumber;
    }
    return lines.join("\n");
  });
  return [blocks.join("\n\n"), ...truncationNote(r)].join("\n");
}

export function globText(success: GlobToolSuccess): string {
  if (success.files.length === 0) return `No files found matching ${success.pattern}.`;
  const notes: string[] = [];
  if (success.totalFiles > success.files.length) {
    notes.push(`[${success.files.length} of ${success.totalFiles} files shown]`);
  }
  if (success.clientTruncated || success.ripgrepTruncated) notes.push("[results truncated]");
  return [...success.files, ...notes].join("\n");
}

// ---- Ls ------------------------------------------------------------------------------------------------------

export function lsTreeText(root: LsDirectoryTreeNode): string {
  const lines = [`${root.absPath}/`];
  appendChildren(root, 1, lines);
  if (lines.length === 1) lines.push("  (empty directory)");
  return lines.join("\n");
}

function appendChildren(node: LsDirectoryTreeNode, depth: number, lines: string[]): void {
  const indent = "  ".repeat(depth);
  for (const dir of node.childrenDirs) {
    const name = childName(node.absPath, dir.absPath);
    if (dir.childrenWereProcessed) {
      lines.push(`${indent}${name}/`);
      appendChildren(dir, depth + 1, lines);
    } else {
      lines.push(`${indent}${name}/ ${unexpandedSummary(dir)}`);
    }
  }
  for (const file of node.childrenFiles) lines.push(`${indent}${file.name}`);
}

function childName(parent: string, child: string): string {
  if (!child.startsWith(parent)) return child;
  return child.slice(parent.length).replace(/^[\\/]+/, "") || child;
}

/** A directory the client did not descend into: say how much it holds so the model can decide to list it. */
function unexpandedSummary(dir: LsDirectoryTreeNode): string {
  const byExtension = Object.entries(dir.fullSubtreeExtensionCounts)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))
    .map(([ext, n]) => `${n} ${ext}`);
  const detail = byExtension.length > 0 ? `: ${byExtension.join(", ")}` : "";
  return `[${dir.numFiles} files${detail}; not expanded]`;
}

// ---- Shell ---------------------------------------------------------------------------------------------------

function outputBlock(output: string): string {
  return output === "" ? "(no output)" : output;
}

function outputLocationNote(location: OutputLocation | undefined): string[] {
  if (!location) return [];
  return [
    `Full output was written to ${location.filePath} (${location.sizeBytes} bytes, ${location.lineCount} lines).`,
  ];
}

export function shellExitText(exit: ShellStreamExit, output: string): string {
  const lines: string[] = [];
  if (exit.aborted) {
    const why = exit.abortReason === ShellAbortReason.TIMEOUT ? " after its time limit" : "";
    lines.push(`Command was aborted${why}.`);
  }
  lines.push(`Exit code: ${exit.code}`, ...outputLocationNote(exit.outputLocation), "", outputBlock(output));
  return lines.join("\n");
}

export function shellBackgroundedText(
  bg: ShellStreamBackgrounded,
  terminalsFolder: string | undefined,
  output: string,
): string {
  const reason =
    bg.reason === ShellBackgroundReason.TIMEOUT
      ? " because it was still running when block_until_ms elapsed"
      : bg.reason === ShellBackgroundReason.USER_REQUEST
        ? " at the user's request"
        : "";
  const lines = [`Command is running in the background${reason}.`, `Shell ID: ${bg.shellId}`];
  if (bg.pid !== undefined) lines.push(`PID: ${bg.pid}`);
  if (terminalsFolder) lines.push(`Terminals folder: ${terminalsFolder} (later output is written there)`);
  lines.push("", "Output so far:", outputBlock(output));
  return lines.join("\n");
}

// ---- Edit ----------------------------------------------------------------------------------------------------

export function editSuccessText(path: string, created: boolean, linesAdded: number, linesRemoved: number): string {
  if (created) return `Created ${path} (${linesAdded} lines).`;
  return `Updated ${path}: ${linesAdded} lines added, ${linesRemoved} lines removed.`;
}
