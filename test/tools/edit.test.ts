import type { MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import type {
  ReadResultSchema,
  ToolCall,
  ToolCallDelta,
  WriteResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { strReplaceDriver, writeDriver } from "../../cursor/tools/edit.js";
import type { EditState } from "../../cursor/tools/edit.js";
import type { ToolCompletion, ToolDriver, ToolInvocation } from "../../cursor/tools/types.js";
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

type ReadInit = MessageInitShape<typeof ReadResultSchema>["result"];
type WriteInit = MessageInitShape<typeof WriteResultSchema>["result"];

const existing: ReadInit = {
  case: "success",
  value: { path: "src/a.ts", output: { case: "content", value: "one\r\ntwo\r\nthree\r\n" } },
};
const missing: ReadInit = { case: "fileNotFound", value: { path: "src/a.ts" } };
const written: WriteInit = { case: "success", value: { path: "src/a.ts", linesCreated: 3 } };

interface Flow {
  readRequest: unknown;
  writeRequest?: { path: string; fileText: string; toolCallId: string };
  completion: ToolCompletion;
}

/** begin → read_result → (write_args → write_result) → completion, asserting each step's kind on the way. */
function edit(driver: ToolDriver<EditState>, call: ToolInvocation, read: ReadInit, write: WriteInit = written): Flow {
  const first = execOf(driver.begin(call, ctx));
  const afterRead = driver.onExecMessage(
    call,
    first.state,
    clientMessage({ case: "readResult", value: { result: read } }),
  );
  if (afterRead.kind === "complete") return { readRequest: first.request, completion: completionOf(afterRead) };
  const second = execOf(afterRead);
  expect(second.request.case).to.equal("writeArgs");
  const done = driver.onExecMessage(
    call,
    second.state,
    clientMessage({ case: "writeResult", value: { result: write } }),
  );
  const writeRequest = second.request.value as Flow["writeRequest"];
  return { readRequest: first.request, writeRequest, completion: completionOf(done) };
}

function editResult(toolCall: ToolCall) {
  return branch(toolCall, "editToolCall").result?.result;
}

describe("Write driver", () => {
  const call = invocation("Write", { path: "src/a.ts", contents: "one\ntwo\nthree\nfour\n" });

  it("placeholder is an empty edit_tool_call; started carries path and the LF stream content", () => {
    expect(branch(writeDriver.placeholder(CALL_ID), "editToolCall").args).to.equal(undefined);
    const crlf = invocation("Write", { path: "x.txt", contents: "a\r\nb" });
    expect(branch(startedCall(writeDriver.started(crlf, ctx)), "editToolCall").args).to.include({
      path: "x.txt",
      streamContent: "a\nb",
    });
    expect(writeDriver.started(invocation("Write", { path: "x" }), ctx))
      .to.have.property("invalid")
      .that.contains('"contents" is required');
  });

  it("on a new file: hidden read (not found ⇒ empty before), write of the full text, success with counts", () => {
    const flow = edit(writeDriver, call, missing);
    expect(flow.readRequest).to.deep.include({ case: "readArgs" });
    expect((flow.readRequest as { value: object }).value).to.include({ path: "src/a.ts", toolCallId: CALL_ID });
    expect(flow.writeRequest).to.include({
      path: "src/a.ts",
      fileText: "one\ntwo\nthree\nfour\n",
      toolCallId: CALL_ID,
    });
    expect(flow.completion).to.include({ isError: false, content: "Created src/a.ts (4 lines)." });
    const result = editResult(flow.completion.toolCall);
    expect(result?.case).to.equal("success");
    expect(result?.value).to.include({
      linesAdded: 4,
      linesRemoved: 0,
      beforeFullFileContent: "",
      afterFullFileContent: "one\ntwo\nthree\nfour\n",
    });
  });

  it("on an existing CRLF file: before is LF-normalised and the diff counts only real changes", () => {
    const flow = edit(writeDriver, call, existing);
    expect(flow.completion).to.include({
      isError: false,
      content: "Updated src/a.ts: 1 lines added, 0 lines removed.",
    });
    const result = editResult(flow.completion.toolCall);
    expect(result?.value).to.include({ beforeFullFileContent: "one\ntwo\nthree\n", linesAdded: 1, linesRemoved: 0 });
    expect((result?.value as { diffString: string }).diffString).to.contain("+four");
  });

  it("write errors complete with the matching EditResult branch", () => {
    const denied = edit(writeDriver, call, missing, {
      case: "permissionDenied",
      value: { path: "src/a.ts", error: "EACCES", isReadonly: true },
    });
    expect(denied.completion.isError).to.equal(true);
    expect(editResult(denied.completion.toolCall)?.case).to.equal("writePermissionDenied");
    const noSpace = edit(writeDriver, call, missing, { case: "noSpace", value: { path: "src/a.ts" } });
    expect(noSpace.completion.content).to.contain("no space left");
    expect(editResult(noSpace.completion.toolCall)?.case).to.equal("error");
    const rejected = edit(writeDriver, call, missing, {
      case: "rejected",
      value: { path: "src/a.ts", reason: "user said no" },
    });
    expect(editResult(rejected.completion.toolCall)?.case).to.equal("rejected");
  });

  it("a read failure other than not-found ends without a write", () => {
    const flow = edit(writeDriver, call, { case: "permissionDenied", value: { path: "src/a.ts" } });
    expect(flow.writeRequest).to.equal(undefined);
    expect(flow.completion.isError).to.equal(true);
    expect(editResult(flow.completion.toolCall)?.case).to.equal("readPermissionDenied");
  });

  it("the wrong oneof in either phase is a protocol error", () => {
    const { state } = execOf(writeDriver.begin(call, ctx));
    const writeFirst = clientMessage({ case: "writeResult", value: { result: written } });
    expect(protocolErrorOf(writeDriver.onExecMessage(call, state, writeFirst))).to.equal(
      "Write: expected read_result but the client sent write_result",
    );
    const writing = execOf(
      writeDriver.onExecMessage(call, state, clientMessage({ case: "readResult", value: { result: missing } })),
    );
    const readAgain = clientMessage({ case: "readResult", value: { result: missing } });
    expect(protocolErrorOf(writeDriver.onExecMessage(call, writing.state, readAgain))).to.equal(
      "Write: expected write_result but the client sent read_result",
    );
  });
});

describe("StrReplace driver", () => {
  const replace = (args: Record<string, unknown>) => invocation("StrReplace", { path: "src/a.ts", ...args });

  it("a unique match is replaced on LF text and written back", () => {
    const flow = edit(strReplaceDriver, replace({ old_string: "two", new_string: "TWO" }), existing);
    expect(flow.writeRequest?.fileText).to.equal("one\nTWO\nthree\n");
    expect(flow.completion).to.include({
      isError: false,
      content: "Updated src/a.ts: 1 lines added, 1 lines removed.",
    });
    expect(branch(flow.completion.toolCall, "editToolCall").args).to.include({
      path: "src/a.ts",
      streamContent: "TWO",
    });
  });

  it("not found and ambiguous complete with an EditResult error and no write", () => {
    const notFound = edit(strReplaceDriver, replace({ old_string: "zzz", new_string: "y" }), existing);
    expect(notFound.writeRequest).to.equal(undefined);
    expect(notFound.completion.isError).to.equal(true);
    expect(notFound.completion.content).to.contain("old_string was not found in src/a.ts");
    expect(editResult(notFound.completion.toolCall)?.case).to.equal("error");
    const ambiguous = edit(strReplaceDriver, replace({ old_string: "t", new_string: "T" }), existing);
    expect(ambiguous.writeRequest).to.equal(undefined);
    expect(ambiguous.completion.content).to.contain("occurs 2 times").and.contain("replace_all");
  });

  it("replace_all replaces every occurrence", () => {
    const flow = edit(strReplaceDriver, replace({ old_string: "t", new_string: "T", replace_all: true }), existing);
    expect(flow.writeRequest?.fileText).to.equal("one\nTwo\nThree\n");
  });

  it("a missing file is EditResult file_not_found; a truncated read is refused", () => {
    const flow = edit(strReplaceDriver, replace({ old_string: "a", new_string: "b" }), missing);
    expect(editResult(flow.completion.toolCall)?.case).to.equal("fileNotFound");
    const truncated: ReadInit = {
      case: "success",
      value: { path: "src/a.ts", truncated: true, output: { case: "content", value: "one\n" } },
    };
    const partial = edit(strReplaceDriver, replace({ old_string: "one", new_string: "1" }), truncated);
    expect(partial.writeRequest).to.equal(undefined);
    expect(partial.completion.isError).to.equal(true);
  });

  it("requires old_string and new_string and a boolean replace_all", () => {
    expect(strReplaceDriver.started(replace({ new_string: "x" }), ctx))
      .to.have.property("invalid")
      .that.contains("old_string");
    const bad = strReplaceDriver.started(replace({ old_string: "a", new_string: "b", replace_all: "yes" }), ctx);
    expect(bad).to.have.property("invalid").that.contains('"replace_all" must be a boolean');
  });
});

describe("edit args streamer", () => {
  function deltaContent(delta: ToolCallDelta): string {
    if (delta.delta.case !== "editToolCallDelta") expect.fail(`expected an edit delta, got ${delta.delta.case}`);
    return delta.delta.value.streamContentDelta;
  }

  it("streams LF-normalised contents, holding a CR split across chunks, then one path partial", () => {
    const streamer = writeDriver.argsStreamer?.(CALL_ID);
    if (!streamer) expect.fail("Write has an args streamer");
    const chunks = ['{"contents":"a\\r', "\\nb\\r", '","pa', 'th":"src/', 'a.ts"', "}"];
    const updates = chunks.flatMap((c) => streamer.push(c));
    expect(updates.map((u) => u.kind)).to.deep.equal(["delta", "delta", "delta", "partial"]);
    const text = updates.flatMap((u) => (u.kind === "delta" ? [deltaContent(u.delta)] : []));
    expect(text).to.deep.equal(["a", "\nb", "\n"]);
    const partial = updates[3];
    if (partial.kind !== "partial") expect.fail("expected a partial");
    expect(partial.toolCall.toolCallId).to.equal(CALL_ID);
    expect(branch(partial.toolCall, "editToolCall").args?.path).to.equal("src/a.ts");
  });

  it("StrReplace streams new_string only, never old_string", () => {
    const streamer = strReplaceDriver.argsStreamer?.(CALL_ID);
    if (!streamer) expect.fail("StrReplace has an args streamer");
    const raw = JSON.stringify({ path: "p", old_string: "OLD", new_string: "NEW\u00e9" });
    const updates = [...raw].flatMap((ch) => streamer.push(ch));
    const text = updates.flatMap((u) => (u.kind === "delta" ? [deltaContent(u.delta)] : [])).join("");
    expect(text).to.equal("NEWé");
    expect(updates.filter((u) => u.kind === "partial")).to.have.length(1);
  });
});
