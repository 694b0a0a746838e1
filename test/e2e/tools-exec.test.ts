// Wire-level e2e: the workspace tools Delete (delete_args → delete_result), ReadLints (one diagnostics_args per path)
// and EditNotebook (a hidden read, the cell edited here, a hidden write) (docs/protocol/cursor-tools.md §5.6.1,
// §5.7). Each with its card → exec → typed result order and one failure the model reads.
import { expect } from "chai";
import { DiagnosticSeverity, type ToolCall } from "../../proto/gen/agent/v1/agent_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { execToolHooks } from "../support/exec-tools-client.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  updates,
  useToolsRig,
  SETTLED_ROUND_THEN_ANSWER,
} from "./tools-kit.js";

/** One call after some text: its placeholder and argument partials, then the staged checkpoint and the start. */
const STAGED_THEN_STARTED = [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
  "tool_call_started",
];

type Branch = NonNullable<ToolCall["tool"]["case"]>;

/** The one completed card of the run, narrowed to the branch expected. */
function completedCard<C extends Branch>(run: Parameters<typeof updates>[0], branch: C) {
  const completed = updates(run, "toolCallCompleted");
  expect(completed).to.have.length(1);
  const tool = completed[0]!.toolCall!.tool;
  if (tool.case !== branch) expect.fail(`expected a ${branch} card, got ${tool.case}`);
  return tool.value as Extract<ToolCall["tool"], { case: C }>["value"];
}

/** The tool message the second model call carries for the round's one call. */
function toolMessage(fake: { requests: Parameters<typeof assertPrefix>[0][] }): unknown {
  const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
  return added[1];
}

const NOTEBOOK = `${JSON.stringify(
  {
    cells: [
      { cell_type: "markdown", metadata: {}, source: ["# Load\n"] },
      { cell_type: "code", execution_count: 1, metadata: {}, outputs: [], source: ["rows = load()\n", "rows[:5]"] },
    ],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 4,
  },
  null,
  1,
)}\n`;

describe("e2e tools: Delete, ReadLints, EditNotebook", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-exec");

  it("Delete: delete_args → the client's delete_result on the card unchanged, the file gone", async () => {
    const fake = await rig.fake(
      { text: "Removing it.", toolCalls: [{ id: "call_del_1", name: "Delete", args: { path: "tmp/old.log" } }] },
      { text: "Deleted." },
    );
    const workspace = createWorkspace({ "tmp/old.log": "stale\n", "keep.txt": "k\n" });
    const { client, run } = rig.start(fake, { text: "remove tmp/old.log", workspace });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED_THEN_STARTED,
      "exec:delete_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(updates(run, "partialToolCall")[0]!.toolCall?.tool.case).to.equal("deleteToolCall");
    expect(execs(run)[0]!.value).to.include({ path: "tmp/old.log", toolCallId: "call_del_1" });
    const card = completedCard(run, "deleteToolCall");
    expect(card.args).to.include({ path: "tmp/old.log", toolCallId: "call_del_1" });
    expect(card.result?.result).to.deep.include({ case: "success" });
    expect(card.result?.result.value).to.include({ deletedFile: "/workspace/tmp/old.log", prevContent: "stale\n" });
    expect([...workspace.files.keys()]).to.deep.equal(["/workspace/keep.txt"]);
    expect(toolMessage(fake)).to.deep.equal({
      role: "tool",
      tool_call_id: "call_del_1",
      content: "Deleted tmp/old.log (6 bytes).",
    });
  });

  it("Delete of a missing file: the typed file_not_found result, an error the model reads, and the turn goes on", async () => {
    const fake = await rig.fake(
      { text: "Removing it.", toolCalls: [{ id: "call_del_2", name: "Delete", args: { path: "nope.txt" } }] },
      { text: "It was not there." },
    );
    const { client, run } = rig.start(fake, { text: "remove nope.txt", workspace: createWorkspace({}) });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED_THEN_STARTED,
      "exec:delete_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(completedCard(run, "deleteToolCall").result?.result).to.deep.include({ case: "fileNotFound" });
    expect(toolMessage(fake)).to.deep.include({ content: "File not found: nope.txt" });
  });

  it("ReadLints: one diagnostics_args per path, in order, folded into one typed result", async () => {
    const fake = await rig.fake();
    const paths = ["src/a.ts", "src/b.ts", "missing.ts"];
    fake.enqueue(
      { text: "Checking.", toolCalls: [{ id: "call_lint_1", name: "ReadLints", args: { paths } }] },
      { text: "One error in a.ts." },
    );
    const diagnostics = new Map([
      [
        "src/a.ts",
        [
          {
            severity: DiagnosticSeverity.ERROR,
            range: { start: { line: 3, column: 7 }, end: { line: 3, column: 10 } },
            message: "Cannot find name 'foo'.",
            source: "ts",
            code: "2304",
          },
        ],
      ],
      ["src/b.ts", []],
    ]);
    const { client, run } = rig.start(fake, { text: "any lint errors?", hooks: execToolHooks({ diagnostics }) });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED_THEN_STARTED,
      "exec:diagnostics_args",
      "exec:diagnostics_args",
      "exec:diagnostics_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const sent = execs(run);
    expect(sent.map((e) => (e.value as { path: string }).path)).to.deep.equal(paths);
    expect(sent.map((e) => (e.value as { toolCallId: string }).toolCallId)).to.deep.equal(Array(3).fill("call_lint_1"));
    // Each Exec takes a new id; the first is the one the round set aside.
    expect(sent.map((e) => e.id)).to.deep.equal([1, 2, 3]);
    const card = completedCard(run, "readLintsToolCall");
    expect(card.args?.paths).to.deep.equal(paths);
    const result = card.result?.result;
    if (result?.case !== "success") expect.fail(`expected a success, got ${result?.case}`);
    expect(result.value).to.include({ totalFiles: 2, totalDiagnostics: 1 });
    expect(result.value.fileDiagnostics.map((f) => f.path)).to.deep.equal(["src/a.ts", "src/b.ts"]);
    expect(toolMessage(fake)).to.deep.include({
      content: [
        "src/a.ts: 1 diagnostic",
        "  3:7 error [ts 2304] Cannot find name 'foo'.",
        "src/b.ts: no diagnostics",
        "missing.ts: file not found",
        "",
        "1 diagnostic in 2 files.",
      ].join("\n"),
    });
  });

  it("ReadLints where no path can be checked: the typed error result, read by the model", async () => {
    const fake = await rig.fake(
      { text: "Checking.", toolCalls: [{ id: "call_lint_2", name: "ReadLints", args: { paths: ["gone.ts"] } }] },
      { text: "That file does not exist." },
    );
    const { client, run } = rig.start(fake, { text: "lint gone.ts", hooks: execToolHooks({}) });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED_THEN_STARTED,
      "exec:diagnostics_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(completedCard(run, "readLintsToolCall").result?.result).to.deep.equal({
      case: "error",
      value: { $typeName: "agent.v1.ReadLintsToolError", errorMessage: "gone.ts: file not found" },
    });
    expect(toolMessage(fake)).to.deep.include({ content: "gone.ts: file not found" });
  });

  it("EditNotebook: an edit card, hidden read then write of the notebook JSON with one cell changed", async () => {
    const fake = await rig.fake();
    const args = {
      target_notebook: "analysis.ipynb",
      cell_idx: 1,
      is_new_cell: false,
      cell_language: "python",
      old_string: "rows[:5]",
      new_string: "rows[:10]",
    };
    fake.enqueue({ text: "Editing.", toolCalls: [{ id: "call_nb_1", name: "EditNotebook", args }] }, { text: "Done." });
    const workspace = createWorkspace({ "analysis.ipynb": NOTEBOOK });
    const { client, run } = rig.start(fake, { text: "show ten rows", workspace });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      "text_delta",
      "partial_tool_call", // the placeholder edit card
      "partial_tool_call", // the argument text
      "partial_tool_call", // EditArgs.path, once target_notebook is complete
      "tool_call_delta", // new_string as stream content
      "token_delta",
      ...Array<string>(5).fill("kv_set"),
      "checkpoint",
      "tool_call_started",
      "exec:read_args",
      "exec:write_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const [read, write] = execs(run);
    expect(read!.value).to.include({ path: "analysis.ipynb", toolCallId: "call_nb_1" });
    expect(write!.value).to.include({ path: "analysis.ipynb", toolCallId: "call_nb_1" });
    expect(write!.id).to.be.greaterThan(read!.id);
    const after = NOTEBOOK.replace('"rows[:5]"', '"rows[:10]"');
    expect(workspace.files.get("/workspace/analysis.ipynb")).to.equal(after);
    const card = completedCard(run, "editToolCall");
    expect(card.args).to.include({ path: "analysis.ipynb", streamContent: "rows[:10]" });
    const result = card.result?.result;
    if (result?.case !== "success") expect.fail(`expected a success, got ${result?.case}`);
    expect(result.value).to.include({
      linesAdded: 1,
      linesRemoved: 1,
      beforeFullFileContent: NOTEBOOK,
      afterFullFileContent: after,
    });
    expect(toolMessage(fake)).to.deep.include({ content: "Updated analysis.ipynb: 1 lines added, 1 lines removed." });
  });

  it("EditNotebook of a missing notebook: the hidden read only, no write, the typed file_not_found result", async () => {
    const fake = await rig.fake();
    const args = {
      target_notebook: "none.ipynb",
      cell_idx: 0,
      is_new_cell: true,
      cell_language: "markdown",
      old_string: "",
      new_string: "# Notes",
    };
    fake.enqueue(
      { text: "Editing.", toolCalls: [{ id: "call_nb_2", name: "EditNotebook", args }] },
      { text: "There is no such notebook." },
    );
    const workspace = createWorkspace({});
    const { client, run } = rig.start(fake, { text: "add notes", workspace });
    await run.done;

    const kinds = run.kinds();
    expect(kinds.slice(kinds.indexOf("tool_call_started"))).to.deep.equal([
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(workspace.files.size).to.equal(0);
    expect(completedCard(run, "editToolCall").result?.result).to.deep.include({ case: "fileNotFound" });
    expect(toolMessage(fake)).to.deep.include({ content: "File not found: none.ipynb" });
  });
});
