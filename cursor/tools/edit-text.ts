// Text rules of the edit domain (docs/protocol/cursor-tools.md §5.6): everything is LF (read content, new content,
// old/new strings, stream deltas, diff, WriteArgs.file_text), StrReplace is an exact match, and the diff is a unified
// diff.
import { FILE_HEADERS_ONLY, formatPatch, structuredPatch } from "diff";

/** CRLF and lone CR become LF. */
export function normalizeLf(text: string): string {
  return text.replace(/\r\n?/g, "\n");
}

/**
 * Streaming LF normalisation: a CR at the end of a chunk is held until the next chunk shows whether it is half
 * of a CRLF, so one line break is never published twice (docs/protocol/cursor-tools.md §5.6).
 */
export class LfStream {
  private heldCr = false;

  push(chunk: string): string {
    let text = this.heldCr ? `\r${chunk}` : chunk;
    this.heldCr = text.endsWith("\r");
    if (this.heldCr) text = text.slice(0, -1);
    return normalizeLf(text);
  }

  /** The text ended: a held CR was a lone CR. */
  end(): string {
    const out = this.heldCr ? "\n" : "";
    this.heldCr = false;
    return out;
  }
}

export type Replacement =
  | { ok: true; after: string; replacements: number }
  | { ok: false; reason: "empty_old_string" | "not_found" | "ambiguous"; occurrences: number };

/** Non-overlapping occurrences of `needle`, left to right. */
function occurrencesOf(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

/**
 * Exact replacement on LF-normalised text. Without replace_all the old string must occur exactly once.
 * Built by slicing, never String.replace, so "$&"-style sequences in new_string stay literal.
 */
export function replaceExact(before: string, oldString: string, newString: string, replaceAll: boolean): Replacement {
  const text = normalizeLf(before);
  const oldText = normalizeLf(oldString);
  const newText = normalizeLf(newString);
  if (oldText === "") return { ok: false, reason: "empty_old_string", occurrences: 0 };
  const found = occurrencesOf(text, oldText);
  if (found.length === 0) return { ok: false, reason: "not_found", occurrences: 0 };
  if (found.length > 1 && !replaceAll) return { ok: false, reason: "ambiguous", occurrences: found.length };
  const parts: string[] = [];
  let from = 0;
  for (const at of found) {
    parts.push(text.slice(from, at), newText);
    from = at + oldText.length;
  }
  parts.push(text.slice(from));
  return { ok: true, after: parts.join(""), replacements: found.length };
}

export interface DiffStats {
  diff: string;
  linesAdded: number;
  linesRemoved: number;
}

/** Unified diff of two LF texts with the counts taken from the same hunks, so text and numbers agree. */
export function diffStats(path: string, before: string, after: string): DiffStats {
  const patch = structuredPatch(path, path, before, after);
  let linesAdded = 0;
  let linesRemoved = 0;
  for (const hunk of patch.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith("+")) linesAdded++;
      else if (line.startsWith("-")) linesRemoved++;
    }
  }
  const diff = patch.hunks.length === 0 ? "" : formatPatch(patch, FILE_HEADERS_ONLY);
  return { diff, linesAdded, linesRemoved };
}
