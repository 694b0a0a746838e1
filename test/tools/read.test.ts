import { expect } from "chai";
import { readDriver } from "../../cursor/tools/read.js";
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

describe("Read driver", () => {
  const call = invocation("Read", { path: "src/app.ts", offset: 10, limit: 20 });

  it("placeholder is the empty read_tool_call branch with the call id byte-for-byte", () => {
    const card = readDriver.placeholder(CALL_ID);
    expect(card.toolCallId).to.equal(CALL_ID);
    expect(branch(card, "readToolCall").args).to.equal(undefined);
  });

  it("started fills ReadToolArgs; begin sends read_args with the same path, offset, limit and tool_call_id", () => {
    const args = branch(startedCall(readDriver.started(call, ctx)), "readToolCall").args;
    expect(args).to.include({ path: "src/app.ts", offset: 10, limit: 20 });
    const { request } = execOf(readDriver.begin(call, ctx));
    expect(request.case).to.equal("readArgs");
    expect(request.value).to.include({ path: "src/app.ts", offset: 10, limit: 20, toolCallId: CALL_ID });
  });

  it("rejects missing path, wrong types and negative limit with a message naming the field", () => {
    const missing = readDriver.started(invocation("Read", {}), ctx);
    expect(missing).to.have.property("invalid").that.contains('"path" is required');
    const wrongType = readDriver.started(invocation("Read", { path: 3 }), ctx);
    expect(wrongType).to.have.property("invalid").that.contains('"path" must be a string');
    const fraction = readDriver.started(invocation("Read", { path: "a", offset: 1.5 }), ctx);
    expect(fraction).to.have.property("invalid").that.contains('"offset" must be a whole number');
    const negative = readDriver.started(invocation("Read", { path: "a", limit: -1 }), ctx);
    expect(negative).to.have.property("invalid").that.contains('"limit"');
  });

  it("success completes with the content as returned and a typed ReadToolSuccess", () => {
    const { state } = execOf(readDriver.begin(call, ctx));
    const message = clientMessage({
      case: "readResult",
      value: {
        result: {
          case: "success",
          value: {
            path: "src/app.ts",
            totalLines: 120,
            fileSize: 4096n,
            output: { case: "content", value: "line 10\nline 11\n" },
          },
        },
      },
    });
    const done = completionOf(readDriver.onExecMessage(call, state, message));
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal("line 10\nline 11\n");
    const card = branch(done.toolCall, "readToolCall");
    expect(card.args?.path).to.equal("src/app.ts");
    expect(card.result?.result.case).to.equal("success");
    const success = card.result?.result.value as { totalLines: number; fileSize: number; output: { value: unknown } };
    expect(success).to.include({ totalLines: 120, fileSize: 4096 });
    expect(success.output.value).to.equal("line 10\nline 11\n");
    expect(done.toolCall.toolCallId).to.equal(CALL_ID);
  });

  it("content that merely contains the word Error is still a success (oneof decides, not text)", () => {
    const { state } = execOf(readDriver.begin(call, ctx));
    const message = clientMessage({
      case: "readResult",
      value: {
        result: { case: "success", value: { path: "e.log", output: { case: "content", value: "Error: failure!" } } },
      },
    });
    expect(completionOf(readDriver.onExecMessage(call, state, message)).isError).to.equal(false);
  });

  const failures = [
    { name: "error", value: { path: "a", error: "EIO" }, text: "Error reading a: EIO" },
    {
      name: "rejected",
      value: { path: "a", reason: "outside workspace" },
      text: "Reading a was rejected: outside workspace",
    },
    { name: "fileNotFound", value: { path: "a" }, text: "File not found: a" },
    { name: "permissionDenied", value: { path: "a" }, text: "Permission denied reading a" },
    { name: "invalidFile", value: { path: "a", reason: "is a directory" }, text: "Cannot read a: is a directory" },
  ] as const;
  for (const f of failures) {
    it(`${f.name} completes as an error with a clear text and ReadToolError`, () => {
      const { state } = execOf(readDriver.begin(call, ctx));
      const message = clientMessage({
        case: "readResult",
        value: { result: { case: f.name, value: f.value } } as never,
      });
      const done = completionOf(readDriver.onExecMessage(call, state, message));
      expect(done.isError).to.equal(true);
      expect(done.content).to.equal(f.text);
      const result = branch(done.toolCall, "readToolCall").result;
      expect(result?.result).to.deep.include({ case: "error" });
      expect((result?.result.value as { errorMessage: string }).errorMessage).to.equal(f.text);
    });
  }

  it("a write_result for a Read is a protocol error naming expected and actual", () => {
    const { state } = execOf(readDriver.begin(call, ctx));
    const message = clientMessage({
      case: "writeResult",
      value: { result: { case: "success", value: { path: "a" } } },
    });
    expect(protocolErrorOf(readDriver.onExecMessage(call, state, message))).to.equal(
      "Read: expected read_result but the client sent write_result",
    );
  });

  it("a read_result with no branch set is a protocol error", () => {
    const { state } = execOf(readDriver.begin(call, ctx));
    const message = clientMessage({ case: "readResult", value: {} });
    expect(protocolErrorOf(readDriver.onExecMessage(call, state, message))).to.contain("no result branch");
  });
});
