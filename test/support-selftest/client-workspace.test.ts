import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import { type ExecServerMessage, ExecServerMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { answerExec, createWorkspace, unscriptedShell } from "../support/client-workspace.js";

const exec = (message: MessageInitShape<typeof ExecServerMessageSchema>["message"]): ExecServerMessage =>
  create(ExecServerMessageSchema, { id: 1, message });

describe("fake client workspace", () => {
  const workspace = () =>
    createWorkspace({ "src/a.ts": "one\ntwo\nthree", "src/lib/b.ts": "TWO two", "README.md": "nothing" });

  it("reads whole files, line ranges, and reports missing files with the file_not_found branch", () => {
    const ws = workspace();
    const whole = answerExec(exec({ case: "readArgs", value: { path: "src/a.ts" } }), ws, unscriptedShell)!.messages[0]!
      .message;
    expect(
      whole.case === "readResult" && whole.value.result.case === "success" && whole.value.result.value.output.value,
    ).to.equal("one\ntwo\nthree");
    const range = answerExec(
      exec({ case: "readArgs", value: { path: "/workspace/src/a.ts", offset: 2, limit: 1 } }),
      ws,
      unscriptedShell,
    )!.messages[0]!.message;
    expect(
      range.case === "readResult" && range.value.result.case === "success" && range.value.result.value.output.value,
    ).to.equal("two");
    const missing = answerExec(exec({ case: "readArgs", value: { path: "nope.ts" } }), ws, unscriptedShell)!
      .messages[0]!.message;
    expect(missing.case === "readResult" && missing.value.result.case).to.equal("fileNotFound");
  });

  it("writes into the workspace", () => {
    const ws = workspace();
    const answer = answerExec(
      exec({ case: "writeArgs", value: { path: "new.txt", fileText: "a\nb" } }),
      ws,
      unscriptedShell,
    )!;
    expect(answer.messages[0]!.message.case).to.equal("writeResult");
    expect(ws.files.get("/workspace/new.txt")).to.equal("a\nb");
  });

  it("greps with content, files and count modes, honouring glob and case", () => {
    const ws = workspace();
    const grep = (args: object) => {
      const m = answerExec(exec({ case: "grepArgs", value: { pattern: "two", ...args } }), ws, unscriptedShell)!
        .messages[0]!.message;
      if (m.case !== "grepResult" || m.value.result.case !== "success") throw new Error("expected grep success");
      return m.value.result.value.workspaceResults["/workspace"]!.result;
    };
    const content = grep({});
    expect(
      content.case === "content" && content.value.matches.map((f) => [f.file, f.matches.map((l) => l.lineNumber)]),
    ).to.deep.equal([
      ["/workspace/src/a.ts", [2]],
      ["/workspace/src/lib/b.ts", [1]],
    ]);
    const files = grep({ outputMode: "files_with_matches", glob: "*.md" });
    expect(files.case === "files" && files.value.files).to.deep.equal([]);
    const counts = (args: object) => {
      const r = grep({ outputMode: "count", pattern: "TWO", ...args });
      return r.case === "count" && r.value.counts.map((c) => [c.file, c.count]);
    };
    expect(counts({})).to.deep.equal([["/workspace/src/lib/b.ts", 1]]);
    expect(counts({ caseInsensitive: true })).to.deep.equal([
      ["/workspace/src/a.ts", 1],
      ["/workspace/src/lib/b.ts", 1],
    ]);
    expect(counts({ caseInsensitive: true, path: "src/lib" })).to.deep.equal([["/workspace/src/lib/b.ts", 1]]);
  });

  it("lists a directory as a tree", () => {
    const m = answerExec(exec({ case: "lsArgs", value: { path: "/workspace/src" } }), workspace(), unscriptedShell)!
      .messages[0]!.message;
    if (m.case !== "lsResult" || m.value.result.case !== "success") throw new Error("expected ls success");
    const root = m.value.result.value.directoryTreeRoot!;
    expect(root.childrenFiles.map((f) => f.name)).to.deep.equal(["a.ts"]);
    expect(root.childrenDirs.map((d) => [d.absPath, d.childrenFiles.map((f) => f.name)])).to.deep.equal([
      ["/workspace/src/lib", ["b.ts"]],
    ]);
  });

  it("plays shell scripts: unscripted commands fail with 127, never-ending ones have no terminal event", () => {
    const events = (answer: ReturnType<typeof answerExec>) =>
      answer!.messages.map(({ message: m }) => (m.case === "shellStream" ? m.value.event.case : m.case));
    const unknown = answerExec(
      exec({ case: "shellStreamArgs", value: { command: "ls" } }),
      workspace(),
      unscriptedShell,
    );
    expect(events(unknown)).to.deep.equal(["start", "stderr", "exit"]);
    const bg = answerExec(exec({ case: "shellStreamArgs", value: { command: "serve" } }), workspace(), () => [
      { stdout: "up" },
      { backgrounded: true },
    ]);
    expect(events(bg)).to.deep.equal(["start", "stdout", "backgrounded"]);
    const never = answerExec(exec({ case: "shellStreamArgs", value: { command: "tail -f" } }), workspace(), () => [
      { stdout: "x", never: true },
    ]);
    expect(events(never)).to.deep.equal(["start", "stdout"]);
    expect(never!.terminal).to.equal(false);
  });

  it("declines Exec branches it does not implement", () => {
    expect(answerExec(exec({ case: "mcpArgs", value: {} }), workspace(), unscriptedShell)).to.equal(undefined);
  });
});
