import { expect } from "chai";
import { globDriver } from "../../cursor/tools/glob.js";
import { grepDriver } from "../../cursor/tools/grep.js";
import {
  CALL_ID,
  branch,
  clientMessage,
  completionOf,
  ctx,
  execOf,
  invocation,
  protocolErrorOf,
  startedCall,
} from "./helpers.js";

describe("Grep driver", () => {
  const call = invocation("Grep", {
    pattern: "TODO\\(",
    path: "src",
    glob: "*.ts",
    output_mode: "content",
    "-A": 1,
    "-B": 2,
    "-C": 3,
    "-i": true,
    type: "ts",
    head_limit: 50,
    offset: 5,
    multiline: false,
  });

  it("maps -A/-B/-C/-i to context_after/before/context/case_insensitive and passes the rest through", () => {
    const { request } = execOf(grepDriver.begin(call, ctx));
    expect(request.case).to.equal("grepArgs");
    expect(request.value).to.include({
      pattern: "TODO\\(",
      path: "src",
      glob: "*.ts",
      outputMode: "content",
      contextAfter: 1,
      contextBefore: 2,
      context: 3,
      caseInsensitive: true,
      type: "ts",
      headLimit: 50,
      offset: 5,
      multiline: false,
      toolCallId: CALL_ID,
    });
    const cardArgs = branch(startedCall(grepDriver.started(call, ctx)), "grepToolCall").args;
    expect(cardArgs?.contextBefore).to.equal(2);
  });

  it("rejects an unknown output_mode and a negative head_limit", () => {
    const mode = grepDriver.started(invocation("Grep", { pattern: "x", output_mode: "lines" }), ctx);
    expect(mode).to.have.property("invalid").that.contains('"output_mode" must be one of');
    const limit = grepDriver.started(invocation("Grep", { pattern: "x", head_limit: -1 }), ctx);
    expect(limit).to.have.property("invalid").that.contains('"head_limit"');
    expect(grepDriver.started(invocation("Grep", { path: "x" }), ctx)).to.have.property("invalid");
  });

  it("renders content matches ripgrep-style and keeps the client's GrepResult on the card", () => {
    const { state } = execOf(grepDriver.begin(call, ctx));
    const message = clientMessage({
      case: "grepResult",
      value: {
        result: {
          case: "success",
          value: {
            pattern: "TODO\\(",
            path: "src",
            outputMode: "content",
            workspaceResults: {
              "/repo": {
                result: {
                  case: "content",
                  value: {
                    matches: [
                      {
                        file: "src/a.ts",
                        matches: [
                          { lineNumber: 3, content: "// before", isContextLine: true },
                          { lineNumber: 4, content: "// TODO(x)" },
                          { lineNumber: 9, content: "// TODO(y)" },
                        ],
                      },
                      { file: "src/b.ts", matches: [{ lineNumber: 1, content: "todo(z)" }] },
                    ],
                    totalLines: 4,
                    totalMatchedLines: 3,
                    clientTruncated: true,
                  },
                },
              },
            },
          },
        },
      },
    });
    const done = completionOf(grepDriver.onExecMessage(call, state, message));
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal(
      [
        "src/a.ts",
        "3-// before",
        "4:// TODO(x)",
        "--",
        "9:// TODO(y)",
        "",
        "src/b.ts",
        "1:todo(z)",
        "[results truncated]",
      ].join("\n"),
    );
    const card = branch(done.toolCall, "grepToolCall");
    expect(card.result?.result.case).to.equal("success");
    expect(card.args?.pattern).to.equal("TODO\\(");
  });

  it("renders files and count modes and says when nothing matched", () => {
    const { state } = execOf(grepDriver.begin(call, ctx));
    const files = clientMessage({
      case: "grepResult",
      value: {
        result: {
          case: "success",
          value: {
            workspaceResults: {
              "/r": { result: { case: "files", value: { files: ["a.ts", "b.ts"], totalFiles: 2 } } },
            },
          },
        },
      },
    });
    expect(completionOf(grepDriver.onExecMessage(call, state, files)).content).to.equal("a.ts\nb.ts");
    const counts = clientMessage({
      case: "grepResult",
      value: {
        result: {
          case: "success",
          value: {
            workspaceResults: {
              "/r": {
                result: {
                  case: "count",
                  value: { counts: [{ file: "a.ts", count: 3 }], totalFiles: 1, totalMatches: 3 },
                },
              },
            },
          },
        },
      },
    });
    expect(completionOf(grepDriver.onExecMessage(call, state, counts)).content).to.equal(
      "a.ts:3\n3 matches in 1 files",
    );
    const none = clientMessage({ case: "grepResult", value: { result: { case: "success", value: {} } } });
    expect(completionOf(grepDriver.onExecMessage(call, state, none)).content).to.equal("No matches found.");
  });

  it("grep error completes as an error; a read_result is a protocol error", () => {
    const { state } = execOf(grepDriver.begin(call, ctx));
    const error = clientMessage({
      case: "grepResult",
      value: { result: { case: "error", value: { error: "regex parse error" } } },
    });
    const done = completionOf(grepDriver.onExecMessage(call, state, error));
    expect(done).to.include({ isError: true, content: "Grep failed: regex parse error" });
    const wrong = clientMessage({
      case: "readResult",
      value: { result: { case: "fileNotFound", value: { path: "x" } } },
    });
    expect(protocolErrorOf(grepDriver.onExecMessage(call, state, wrong))).to.equal(
      "Grep: expected grep_result but the client sent read_result",
    );
  });
});

describe("Glob driver", () => {
  const call = invocation("Glob", { glob_pattern: "**/*.test.ts", target_directory: "/repo/test" });

  it("shows a glob_tool_call card but sends grep_args with an empty pattern and files_with_matches", () => {
    expect(branch(globDriver.placeholder(CALL_ID), "globToolCall").args).to.equal(undefined);
    const card = branch(startedCall(globDriver.started(call, ctx)), "globToolCall");
    expect(card.args).to.include({ globPattern: "**/*.test.ts", targetDirectory: "/repo/test" });
    const { request } = execOf(globDriver.begin(call, ctx));
    expect(request.case).to.equal("grepArgs");
    expect(request.value).to.include({
      pattern: "",
      glob: "**/*.test.ts",
      path: "/repo/test",
      outputMode: "files_with_matches",
      toolCallId: CALL_ID,
    });
  });

  it("converts grep_result files into GlobToolSuccess and a file list", () => {
    const { state } = execOf(globDriver.begin(call, ctx));
    const message = clientMessage({
      case: "grepResult",
      value: {
        result: {
          case: "success",
          value: {
            path: "/repo/test",
            outputMode: "files_with_matches",
            workspaceResults: {
              "/repo": {
                result: {
                  case: "files",
                  value: { files: ["test/a.test.ts", "test/b.test.ts"], totalFiles: 5, clientTruncated: true },
                },
              },
            },
          },
        },
      },
    });
    const done = completionOf(globDriver.onExecMessage(call, state, message));
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal("test/a.test.ts\ntest/b.test.ts\n[2 of 5 files shown]\n[results truncated]");
    const result = branch(done.toolCall, "globToolCall").result?.result;
    expect(result?.case).to.equal("success");
    expect(result?.value).to.deep.include({
      pattern: "**/*.test.ts",
      path: "/repo/test",
      files: ["test/a.test.ts", "test/b.test.ts"],
      totalFiles: 5,
      clientTruncated: true,
      ripgrepTruncated: false,
    });
  });

  it("an empty match list says no files matched; grep error becomes GlobToolError", () => {
    const { state } = execOf(globDriver.begin(call, ctx));
    const empty = clientMessage({ case: "grepResult", value: { result: { case: "success", value: {} } } });
    expect(completionOf(globDriver.onExecMessage(call, state, empty)).content).to.equal(
      "No files found matching **/*.test.ts.",
    );
    const error = clientMessage({
      case: "grepResult",
      value: { result: { case: "error", value: { error: "no such dir" } } },
    });
    const done = completionOf(globDriver.onExecMessage(call, state, error));
    expect(done.isError).to.equal(true);
    expect(branch(done.toolCall, "globToolCall").result?.result).to.deep.include({ case: "error" });
  });

  it("requires glob_pattern and answers an ls_result with a protocol error", () => {
    expect(globDriver.started(invocation("Glob", { target_directory: "x" }), ctx))
      .to.have.property("invalid")
      .that.contains("glob_pattern");
    const { state } = execOf(globDriver.begin(call, ctx));
    const wrong = clientMessage({ case: "lsResult", value: {} });
    expect(protocolErrorOf(globDriver.onExecMessage(call, state, wrong))).to.contain(
      "expected grep_result but the client sent ls_result",
    );
  });
});
