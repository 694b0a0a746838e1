import { expect } from "chai";
import fc from "fast-check";
import { editNotebookDriver } from "../../cursor/tools/edit.js";
import { applyNotebookEdit, type NotebookEdit } from "../../cursor/tools/notebook.js";
import { CALL_ID, branch, clientMessage, completionOf, ctx, execOf, invocation, startedCall } from "./helpers.js";

/** A notebook as Jupyter writes it: one-space indent, sources as line lists, a trailing newline. */
const NOTEBOOK = `${JSON.stringify(
  {
    cells: [
      { cell_type: "markdown", id: "a1", metadata: {}, source: ["# Title\n", "Intro"] },
      { cell_type: "code", execution_count: 1, id: "b2", metadata: {}, outputs: [], source: ["x = 1\n", "print(x)"] },
    ],
    metadata: { kernelspec: { name: "python3" } },
    nbformat: 4,
    nbformat_minor: 5,
  },
  null,
  1,
)}\n`;

const edit = (e: Partial<NotebookEdit>): NotebookEdit => ({
  path: "nb.ipynb",
  cellIdx: 1,
  isNewCell: false,
  cellLanguage: "python",
  oldString: "x = 1",
  newString: "x = 2",
  ...e,
});

function cellsOf(text: string) {
  return (JSON.parse(text) as { cells: Array<Record<string, unknown>> }).cells;
}

describe("EditNotebook: the cell edit", () => {
  it("replaces a unique string inside one cell; everything else is written back byte for byte", () => {
    const out = applyNotebookEdit(NOTEBOOK, edit({}), CALL_ID);
    if (!out.ok) expect.fail(out.error);
    expect(out.after).to.equal(NOTEBOOK.replace('"x = 1\\n"', '"x = 2\\n"'));
  });

  it("inserts a new code cell at cell_idx with an id when the notebook's cells have ids, the same on every run", () => {
    const out = applyNotebookEdit(
      NOTEBOOK,
      edit({ isNewCell: true, cellIdx: 2, oldString: "", newString: "y = 3\nz" }),
      CALL_ID,
    );
    if (!out.ok) expect.fail(out.error);
    const added = cellsOf(out.after)[2]!;
    expect(Object.keys(added)).to.deep.equal(["cell_type", "execution_count", "id", "metadata", "outputs", "source"]);
    expect(added).to.deep.include({ cell_type: "code", execution_count: null, source: ["y = 3\n", "z"] });
    expect(added.id).to.match(/^[0-9a-f]{8}$/);
    const again = applyNotebookEdit(
      NOTEBOOK,
      edit({ isNewCell: true, cellIdx: 2, oldString: "", newString: "y = 3\nz" }),
      CALL_ID,
    );
    expect(again).to.deep.equal(out);
  });

  it("a markdown cell language makes a markdown cell (no outputs); CRLF in new text becomes LF", () => {
    const out = applyNotebookEdit(
      NOTEBOOK,
      edit({ isNewCell: true, cellIdx: 0, cellLanguage: "markdown", oldString: "", newString: "Hi\r\nthere" }),
      CALL_ID,
    );
    if (!out.ok) expect.fail(out.error);
    const first = cellsOf(out.after)[0]!;
    expect(first).to.deep.include({ cell_type: "markdown", source: ["Hi\n", "there"] });
    expect(first).to.not.have.property("outputs");
    expect(cellsOf(out.after)).to.have.length(3);
  });

  it("keeps the file's own indentation and a string source as a string", () => {
    const twoSpaces = JSON.stringify({ cells: [{ cell_type: "code", source: "a = 1\nb = 2" }], nbformat: 4 }, null, 2);
    const out = applyNotebookEdit(twoSpaces, edit({ cellIdx: 0, oldString: "b = 2", newString: "b = 3" }), CALL_ID);
    if (!out.ok) expect.fail(out.error);
    expect(out.after).to.equal(twoSpaces.replace("b = 2", "b = 3"));
  });

  it("an empty old_string fills an empty cell, and is refused on a cell that has text", () => {
    const empty = JSON.stringify({ cells: [{ cell_type: "code", source: [] }] }, null, 1);
    const filled = applyNotebookEdit(empty, edit({ cellIdx: 0, oldString: "", newString: "go()" }), CALL_ID);
    if (!filled.ok) expect.fail(filled.error);
    expect(cellsOf(filled.after)[0]!.source).to.deep.equal(["go()"]);
    expect(applyNotebookEdit(NOTEBOOK, edit({ oldString: "" }), CALL_ID)).to.deep.equal({
      ok: false,
      error: "old_string must not be empty (cell 1 is not empty); to add a cell set is_new_cell",
    });
  });

  it("names what is wrong: no match, several matches, no such cell, not a notebook", () => {
    expect(applyNotebookEdit(NOTEBOOK, edit({ oldString: "y = 9" }), CALL_ID)).to.deep.equal({
      ok: false,
      error: "old_string was not found in cell 1; it must match the cell's source exactly",
    });
    expect(applyNotebookEdit(NOTEBOOK, edit({ oldString: "x" }), CALL_ID)).to.deep.equal({
      ok: false,
      error: "old_string occurs 2 times in cell 1; include more context",
    });
    expect(applyNotebookEdit(NOTEBOOK, edit({ cellIdx: 2 }), CALL_ID)).to.deep.equal({
      ok: false,
      error: "cell 2 does not exist (2 cells)",
    });
    expect(applyNotebookEdit(NOTEBOOK, edit({ isNewCell: true, cellIdx: 3 }), CALL_ID)).to.deep.equal({
      ok: false,
      error: "cell_idx 3 is past the end (2 cells)",
    });
    expect(applyNotebookEdit("{}", edit({}), CALL_ID)).to.deep.equal({
      ok: false,
      error: "nb.ipynb is not a notebook: it has no list of cells",
    });
    const broken = applyNotebookEdit("{", edit({}), CALL_ID);
    expect(broken.ok).to.equal(false);
  });
});

describe("EditNotebook driver", () => {
  const args = {
    target_notebook: "nb.ipynb",
    cell_idx: 1,
    is_new_cell: false,
    cell_language: "python",
    old_string: "x = 1",
    new_string: "x = 2",
  };
  const call = invocation("EditNotebook", args);

  it("shows as an edit card, reads the notebook, writes the edited JSON back with the same tool_call_id", () => {
    expect(branch(startedCall(editNotebookDriver.started(call, ctx)), "editToolCall").args).to.include({
      path: "nb.ipynb",
      streamContent: "x = 2",
    });
    const read = execOf(editNotebookDriver.begin(call, ctx));
    expect(read.request.case).to.equal("readArgs");
    expect(read.request.value).to.include({ path: "nb.ipynb", toolCallId: CALL_ID });
    const content = { case: "content" as const, value: NOTEBOOK };
    const write = execOf(
      editNotebookDriver.onExecMessage(
        call,
        read.state,
        clientMessage({
          case: "readResult",
          value: { result: { case: "success", value: { path: "nb.ipynb", output: content } } },
        }),
      ),
    );
    expect(write.request.case).to.equal("writeArgs");
    expect(write.request.value).to.include({ path: "nb.ipynb", toolCallId: CALL_ID });
    expect((write.request.value as { fileText: string }).fileText).to.equal(NOTEBOOK.replace("x = 1", "x = 2"));
    const done = completionOf(
      editNotebookDriver.onExecMessage(
        call,
        write.state,
        clientMessage({ case: "writeResult", value: { result: { case: "success", value: { path: "nb.ipynb" } } } }),
      ),
    );
    expect(done).to.include({ isError: false, content: "Updated nb.ipynb: 1 lines added, 1 lines removed." });
    expect(branch(done.toolCall, "editToolCall").result?.result.case).to.equal("success");
  });

  it("a missing notebook or a failed cell edit ends without a write, as an error result", () => {
    const read = execOf(editNotebookDriver.begin(call, ctx));
    const missing = completionOf(
      editNotebookDriver.onExecMessage(
        call,
        read.state,
        clientMessage({ case: "readResult", value: { result: { case: "fileNotFound", value: {} } } }),
      ),
    );
    expect(missing).to.include({ isError: true, content: "File not found: nb.ipynb" });
    expect(branch(missing.toolCall, "editToolCall").result?.result.case).to.equal("fileNotFound");
    const text = { case: "content" as const, value: "not json" };
    const broken = completionOf(
      editNotebookDriver.onExecMessage(
        call,
        read.state,
        clientMessage({ case: "readResult", value: { result: { case: "success", value: { output: text } } } }),
      ),
    );
    expect(broken.isError).to.equal(true);
    expect(broken.content).to.match(/^Cannot edit nb\.ipynb: nb\.ipynb is not a notebook: /);
  });

  it("requires every argument, with a whole, non-negative cell_idx", () => {
    const { cell_language: _, ...noLanguage } = args;
    expect(editNotebookDriver.started(invocation("EditNotebook", noLanguage), ctx)).to.deep.equal({
      invalid: 'Invalid arguments for EditNotebook: "cell_language" is required.',
    });
    expect(editNotebookDriver.started(invocation("EditNotebook", { ...args, cell_idx: 1.5 }), ctx))
      .to.have.property("invalid")
      .that.contains('"cell_idx" must be a whole number');
    expect(editNotebookDriver.started(invocation("EditNotebook", { ...args, cell_idx: -1 }), ctx))
      .to.have.property("invalid")
      .that.contains('"cell_idx" must be between 0');
    expect(editNotebookDriver.started(invocation("EditNotebook", { ...args, is_new_cell: "no" }), ctx))
      .to.have.property("invalid")
      .that.contains('"is_new_cell" must be a boolean');
  });
});

describe("EditNotebook: properties of the cell edit", () => {
  // Sources from a small alphabet, so matches and non-matches both come up; markers are outside it.
  const source = fc.array(fc.constantFrom("a", "b", " ", "\n", "é"), { maxLength: 12 }).map((cs) => cs.join(""));
  const notebook = fc
    .record({
      sources: fc.array(fc.tuple(source, fc.boolean()), { minLength: 1, maxLength: 5 }),
      indent: fc.constantFrom(1, 2, 4),
    })
    .map(({ sources, indent }) => {
      const cells = sources.map(([text, asString]) => ({
        cell_type: "code",
        metadata: {},
        source: asString ? text : (text.match(/[^\n]*\n|[^\n]+$/g) ?? []),
      }));
      return `${JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 4 }, null, indent)}\n`;
    });

  it("a replacement undone by the reverse replacement gives the notebook back byte for byte", () => {
    const withMarker = fc.tuple(notebook, fc.nat(), source, source).map(([text, pick, head, tail]) => {
      const parsed = JSON.parse(text) as { cells: Array<{ source: string | string[] }> };
      const cellIdx = pick % parsed.cells.length;
      const cell = parsed.cells[cellIdx]!;
      const marked = `${head}<m>${tail}`;
      cell.source = typeof cell.source === "string" ? marked : (marked.match(/[^\n]*\n|[^\n]+$/g) ?? []);
      const indent = /^\{\n( +)"/.exec(text)![1]!;
      return { text: `${JSON.stringify(parsed, null, indent)}\n`, cellIdx };
    });
    fc.assert(
      fc.property(withMarker, ({ text, cellIdx }) => {
        const there = applyNotebookEdit(text, edit({ cellIdx, oldString: "<m>", newString: "<x>\n<y>" }), CALL_ID);
        if (!there.ok) return expect.fail(there.error);
        expect(there.after).to.not.equal(text);
        const back = applyNotebookEdit(
          there.after,
          edit({ cellIdx, oldString: "<x>\n<y>", newString: "<m>" }),
          CALL_ID,
        );
        if (!back.ok) return expect.fail(back.error);
        expect(back.after).to.equal(text);
      }),
    );
  });

  it("an inserted cell lands at cell_idx and leaves every other cell as it was", () => {
    fc.assert(
      fc.property(notebook, fc.nat(), source, (text, pick, added) => {
        const before = cellsOf(text);
        const cellIdx = pick % (before.length + 1);
        const out = applyNotebookEdit(
          text,
          edit({ cellIdx, isNewCell: true, oldString: "", newString: added }),
          CALL_ID,
        );
        if (!out.ok) return expect.fail(out.error);
        const after = cellsOf(out.after);
        expect(after.length).to.equal(before.length + 1);
        expect([...after.slice(0, cellIdx), ...after.slice(cellIdx + 1)]).to.deep.equal(before);
        expect((after[cellIdx]!.source as string[]).join("")).to.equal(added);
      }),
    );
  });
});
