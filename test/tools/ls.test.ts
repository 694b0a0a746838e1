import { expect } from "chai";
import { lsDriver } from "../../cursor/tools/ls.js";
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

const tree = {
  absPath: "/repo",
  childrenWereProcessed: true,
  childrenDirs: [
    {
      absPath: "/repo/src",
      childrenWereProcessed: true,
      childrenFiles: [{ name: "index.ts" }],
      childrenDirs: [],
    },
    {
      absPath: "/repo/node_modules",
      childrenWereProcessed: false,
      numFiles: 120,
      fullSubtreeExtensionCounts: { ".js": 100, ".json": 20 },
    },
  ],
  childrenFiles: [{ name: "package.json" }, { name: "README.md" }],
};

describe("Ls driver", () => {
  const call = invocation("Ls", { path: "/repo", ignore: ["dist"] });

  it("sends ls_args with path, ignore and the tool call id; card reuses LsArgs", () => {
    expect(branch(lsDriver.placeholder(CALL_ID), "lsToolCall").args).to.equal(undefined);
    expect(branch(startedCall(lsDriver.started(call, ctx)), "lsToolCall").args?.ignore).to.deep.equal(["dist"]);
    const { request } = execOf(lsDriver.begin(call, ctx));
    expect(request.case).to.equal("lsArgs");
    expect(request.value).to.deep.include({ path: "/repo", ignore: ["dist"], toolCallId: CALL_ID });
  });

  it("rejects a non-string ignore entry", () => {
    const bad = lsDriver.started(invocation("Ls", { path: "/repo", ignore: ["a", 2] }), ctx);
    expect(bad).to.have.property("invalid").that.contains('"ignore[1]" must be a string');
  });

  it("success renders an indented tree, summarising directories the client did not expand", () => {
    const { state } = execOf(lsDriver.begin(call, ctx));
    const message = clientMessage({
      case: "lsResult",
      value: { result: { case: "success", value: { directoryTreeRoot: tree } } },
    });
    const done = completionOf(lsDriver.onExecMessage(call, state, message));
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal(
      [
        "/repo/",
        "  src/",
        "    index.ts",
        "  node_modules/ [120 files: 100 .js, 20 .json; not expanded]",
        "  package.json",
        "  README.md",
      ].join("\n"),
    );
    expect(branch(done.toolCall, "lsToolCall").result?.result.case).to.equal("success");
  });

  it("error, rejected and timeout are error completions; timeout keeps the partial tree", () => {
    const { state } = execOf(lsDriver.begin(call, ctx));
    const error = clientMessage({
      case: "lsResult",
      value: { result: { case: "error", value: { path: "/repo", error: "ENOENT" } } },
    });
    expect(completionOf(lsDriver.onExecMessage(call, state, error))).to.include({
      isError: true,
      content: "Error listing /repo: ENOENT",
    });
    const rejected = clientMessage({
      case: "lsResult",
      value: { result: { case: "rejected", value: { path: "/repo", reason: "ignored" } } },
    });
    expect(completionOf(lsDriver.onExecMessage(call, state, rejected)).isError).to.equal(true);
    const timeout = clientMessage({
      case: "lsResult",
      value: {
        result: {
          case: "timeout",
          value: {
            directoryTreeRoot: { absPath: "/repo", childrenWereProcessed: true, childrenFiles: [{ name: "a" }] },
          },
        },
      },
    });
    const done = completionOf(lsDriver.onExecMessage(call, state, timeout));
    expect(done.isError).to.equal(true);
    expect(done.content).to.equal("Listing /repo timed out; partial listing:\n/repo/\n  a");
  });

  it("a grep_result is a protocol error", () => {
    const { state } = execOf(lsDriver.begin(call, ctx));
    const wrong = clientMessage({ case: "grepResult", value: {} });
    expect(protocolErrorOf(lsDriver.onExecMessage(call, state, wrong))).to.equal(
      "Ls: expected ls_result but the client sent grep_result",
    );
  });
});
