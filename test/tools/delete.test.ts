import { expect } from "chai";
import { deleteDriver } from "../../cursor/tools/delete.js";
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

describe("Delete driver", () => {
  const call = invocation("Delete", { path: "build/old.js" });
  const answer = (result: Parameters<typeof clientMessage>[0]) =>
    deleteDriver.onExecMessage(call, execOf(deleteDriver.begin(call, ctx)).state, clientMessage(result));

  it("started fills DeleteArgs; begin sends delete_args with the path and the call id", () => {
    const args = branch(startedCall(deleteDriver.started(call, ctx)), "deleteToolCall").args;
    expect(args).to.include({ path: "build/old.js", toolCallId: CALL_ID });
    const { request } = execOf(deleteDriver.begin(call, ctx));
    expect(request.case).to.equal("deleteArgs");
    expect(request.value).to.include({ path: "build/old.js", toolCallId: CALL_ID });
  });

  it("refuses a missing or non-string path", () => {
    expect(deleteDriver.started(invocation("Delete", {}), ctx)).to.deep.equal({
      invalid: 'Invalid arguments for Delete: "path" is required.',
    });
    expect(deleteDriver.started(invocation("Delete", { path: ["a"] }), ctx))
      .to.have.property("invalid")
      .that.contains('"path" must be a string');
  });

  it("success puts the client's DeleteResult on the card unchanged", () => {
    const done = completionOf(
      answer({
        case: "deleteResult",
        value: {
          result: {
            case: "success",
            value: { path: "build/old.js", deletedFile: "/w/build/old.js", fileSize: 12n, prevContent: "x" },
          },
        },
      }),
    );
    expect(done).to.include({ content: "Deleted build/old.js (12 bytes).", isError: false });
    const result = branch(done.toolCall, "deleteToolCall").result?.result;
    if (result?.case !== "success") expect.fail(`expected success, got ${result?.case}`);
    expect(result.value).to.include({ deletedFile: "/w/build/old.js", prevContent: "x" });
  });

  const failures: Array<[Parameters<typeof clientMessage>[0], string]> = [
    [{ case: "deleteResult", value: { result: { case: "fileNotFound", value: {} } } }, "File not found: build/old.js"],
    [
      { case: "deleteResult", value: { result: { case: "notFile", value: { actualType: "directory" } } } },
      "Cannot delete build/old.js: not a file (it is a directory).",
    ],
    [
      { case: "deleteResult", value: { result: { case: "permissionDenied", value: { isReadonly: true } } } },
      "Permission denied deleting build/old.js: the file is read-only",
    ],
    [
      { case: "deleteResult", value: { result: { case: "fileBusy", value: {} } } },
      "Cannot delete build/old.js: the file is in use.",
    ],
    [
      { case: "deleteResult", value: { result: { case: "rejected", value: { reason: "not now" } } } },
      "Deleting build/old.js was rejected: not now",
    ],
    [
      { case: "deleteResult", value: { result: { case: "error", value: { error: "EIO" } } } },
      "Error deleting build/old.js: EIO",
    ],
  ];
  for (const [message, text] of failures) {
    it(`${(message!.value as { result: { case: string } }).result.case}: an error result the model reads`, () => {
      const done = completionOf(answer(message));
      expect(done).to.include({ content: text, isError: true });
      expect(branch(done.toolCall, "deleteToolCall").result?.result.case).to.equal(
        (message!.value as { result: { case: string } }).result.case,
      );
    });
  }

  it("a result of another kind, or with no branch, is a protocol error", () => {
    expect(protocolErrorOf(answer({ case: "readResult", value: {} }))).to.equal(
      "Delete: expected delete_result but the client sent read_result",
    );
    expect(protocolErrorOf(answer({ case: "deleteResult", value: {} }))).to.equal(
      "Delete: delete_result has no result branch set",
    );
  });
});
