// The cell edit of EditNotebook (docs/protocol/cursor-tools.md §5.6.1), applied by the gateway to the notebook's
// JSON text between the hidden read and the hidden write: replace a unique string inside one cell's source, or
// insert a new cell. The rest of the file is written back as it was parsed, in the file's own indentation, so the
// diff shows only the cell that changed.
import { createHash } from "node:crypto";
import { normalizeLf, replaceExact } from "./edit-text.js";

export interface NotebookEdit {
  path: string;
  cellIdx: number;
  isNewCell: boolean;
  cellLanguage: string;
  oldString: string;
  newString: string;
}

export type NotebookOutcome = { ok: true; after: string } | { ok: false; error: string };

type Json = Record<string, unknown>;
type Cell = Json & { source?: unknown };

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** nbformat stores a source as one string or as lines that keep their "\n". */
function sourceText(cell: Cell): string | undefined {
  const { source } = cell;
  if (source === undefined) return "";
  if (typeof source === "string") return normalizeLf(source);
  if (Array.isArray(source) && source.every((l) => typeof l === "string")) return normalizeLf(source.join(""));
  return undefined;
}

function sourceLines(text: string): string[] {
  return text === "" ? [] : (text.match(/[^\n]*\n|[^\n]+$/g) ?? []);
}

/** The new source in the same shape the cell used (a string stays a string). */
function withSource(cell: Cell, text: string): Cell {
  return { ...cell, source: typeof cell.source === "string" ? text : sourceLines(text) };
}

/** `idSeed` (the call id) gives the cell an id when the notebook's cells have them (nbformat 4.5+), the same one
 * every time the call runs. */
function newCell(edit: NotebookEdit, idSeed: string | undefined): Cell {
  const language = edit.cellLanguage.toLowerCase();
  const cellType = language === "markdown" || language === "raw" ? language : "code";
  const id = idSeed === undefined ? {} : { id: createHash("sha256").update(idSeed).digest("hex").slice(0, 8) };
  const source = sourceLines(normalizeLf(edit.newString));
  // Keys in nbformat's own (sorted) order.
  return cellType === "code"
    ? { cell_type: cellType, execution_count: null, ...id, metadata: {}, outputs: [], source }
    : { cell_type: cellType, ...id, metadata: {}, source };
}

function editCell(cell: Cell, edit: NotebookEdit): Cell | string {
  const before = sourceText(cell);
  if (before === undefined) return `cell ${edit.cellIdx} has a source that is not text`;
  // An empty cell has nothing to match: an empty old_string fills it.
  if (edit.oldString === "" && before === "") return withSource(cell, normalizeLf(edit.newString));
  const replaced = replaceExact(before, edit.oldString, edit.newString, false);
  if (replaced.ok) return withSource(cell, replaced.after);
  switch (replaced.reason) {
    case "empty_old_string":
      return `old_string must not be empty (cell ${edit.cellIdx} is not empty); to add a cell set is_new_cell`;
    case "not_found":
      return `old_string was not found in cell ${edit.cellIdx}; it must match the cell's source exactly`;
    case "ambiguous":
      return `old_string occurs ${replaced.occurrences} times in cell ${edit.cellIdx}; include more context`;
  }
}

/** The file's own indentation (nbformat writes one space), read from its first key. */
function indentOf(text: string): string {
  return /^\{\n([ \t]+)"/.exec(text)?.[1] ?? " ";
}

export function applyNotebookEdit(before: string, edit: NotebookEdit, callId: string): NotebookOutcome {
  let notebook: unknown;
  try {
    notebook = JSON.parse(before);
  } catch (err) {
    return { ok: false, error: `${edit.path} is not a notebook: ${(err as Error).message}` };
  }
  if (!isObject(notebook) || !Array.isArray(notebook.cells) || !notebook.cells.every(isObject)) {
    return { ok: false, error: `${edit.path} is not a notebook: it has no list of cells` };
  }
  const cells = notebook.cells as Cell[];
  const count = cells.length;
  let edited: Cell[];
  if (edit.isNewCell) {
    if (edit.cellIdx > count) return { ok: false, error: `cell_idx ${edit.cellIdx} is past the end (${count} cells)` };
    const idSeed = cells.some((c) => typeof c.id === "string") ? callId : undefined;
    edited = [...cells.slice(0, edit.cellIdx), newCell(edit, idSeed), ...cells.slice(edit.cellIdx)];
  } else {
    if (edit.cellIdx >= count) return { ok: false, error: `cell ${edit.cellIdx} does not exist (${count} cells)` };
    const cell = editCell(cells[edit.cellIdx]!, edit);
    if (typeof cell === "string") return { ok: false, error: cell };
    edited = cells.map((c, i) => (i === edit.cellIdx ? cell : c));
  }
  const text = JSON.stringify({ ...notebook, cells: edited }, null, indentOf(before));
  return { ok: true, after: before.endsWith("\n") ? `${text}\n` : text };
}
