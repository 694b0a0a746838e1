import { expect } from "chai";
import { DiagnosticSeverity } from "../../proto/gen/agent/v1/agent_pb.js";
import { MAX_LINT_PATHS, readLintsDriver } from "../../cursor/tools/read-lints.js";
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

const typeError = {
  severity: DiagnosticSeverity.ERROR,
  range: { start: { line: 12, column: 5 }, end: { line: 12, column: 9 } },
  message: "Type 'string' is not assignable to type 'number'.",
  source: "ts",
  code: "2322",
};
const unused = { severity: DiagnosticSeverity.WARNING, message: "'x' is never used.", source: "eslint" };

type Message = Parameters<typeof clientMessage>[0];
const success = (path: string, diagnostics: object[]): Message => ({
  case: "diagnosticsResult",
  value: { result: { case: "success", value: { path, diagnostics, totalDiagnostics: diagnostics.length } } },
});

/** Runs the call to its end, answering each Exec in turn; returns the paths asked for and the last step. */
function run(paths: string[], answers: Message[]) {
  const call = invocation("ReadLints", { paths });
  let step = readLintsDriver.begin(call, ctx);
  const asked: string[] = [];
  for (const message of answers) {
    const { request, state } = execOf(step);
    if (request.case !== "diagnosticsArgs") expect.fail(`expected diagnostics_args, got ${request.case}`);
    expect(request.value.toolCallId).to.equal(CALL_ID);
    asked.push(request.value.path);
    step = readLintsDriver.onExecMessage(call, state, clientMessage(message));
  }
  return { asked, step };
}

describe("ReadLints driver", () => {
  it("sends one diagnostics_args per path, in order, and folds every file into one typed result", () => {
    const { asked, step } = run(
      ["src/a.ts", "src/b.ts", "src/c.ts"],
      [success("src/a.ts", [typeError, unused]), success("src/b.ts", []), success("src/c.ts", [unused])],
    );
    expect(asked).to.deep.equal(["src/a.ts", "src/b.ts", "src/c.ts"]);
    const done = completionOf(step);
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal(
      [
        "src/a.ts: 2 diagnostics",
        "  12:5 error [ts 2322] Type 'string' is not assignable to type 'number'.",
        "  warning [eslint] 'x' is never used.",
        "src/b.ts: no diagnostics",
        "src/c.ts: 1 diagnostic",
        "  warning [eslint] 'x' is never used.",
        "",
        "3 diagnostics in 3 files.",
      ].join("\n"),
    );
    const card = branch(done.toolCall, "readLintsToolCall");
    expect(card.args?.paths).to.deep.equal(["src/a.ts", "src/b.ts", "src/c.ts"]);
    const result = card.result?.result;
    if (result?.case !== "success") expect.fail(`expected success, got ${result?.case}`);
    expect(result.value).to.include({ totalFiles: 3, totalDiagnostics: 3 });
    expect(result.value.fileDiagnostics.map((f) => [f.path, f.diagnosticsCount])).to.deep.equal([
      ["src/a.ts", 2],
      ["src/b.ts", 0],
      ["src/c.ts", 1],
    ]);
    expect(result.value.fileDiagnostics[0]!.diagnostics[0]).to.deep.include({
      severity: DiagnosticSeverity.ERROR,
      message: typeError.message,
      code: "2322",
    });
    expect(result.value.fileDiagnostics[0]!.diagnostics[0]!.range?.start).to.deep.include({ line: 12, column: 5 });
  });

  it("a severity the schema does not name, or none, reads as a plain diagnostic; stale ones are marked", () => {
    const { step } = run(
      ["a.ts"],
      [
        success("a.ts", [
          { severity: 9, message: "odd" },
          { message: "old", isStale: true },
        ]),
      ],
    );
    expect(completionOf(step).content).to.equal(
      "a.ts: 2 diagnostics\n  diagnostic odd\n  diagnostic old (stale)\n\n2 diagnostics in 1 file.",
    );
  });

  it("a path the client cannot check is named in the text; the others still count", () => {
    const { step } = run(
      ["src/a.ts", "gone.ts"],
      [success("src/a.ts", []), { case: "diagnosticsResult", value: { result: { case: "fileNotFound", value: {} } } }],
    );
    const done = completionOf(step);
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal("src/a.ts: no diagnostics\ngone.ts: file not found\n\n0 diagnostics in 1 file.");
  });

  it("when no path could be checked the call is an error result", () => {
    const { step } = run(
      ["gone.ts", "secret.ts"],
      [
        { case: "diagnosticsResult", value: { result: { case: "fileNotFound", value: { path: "gone.ts" } } } },
        { case: "diagnosticsResult", value: { result: { case: "permissionDenied", value: {} } } },
      ],
    );
    const done = completionOf(step);
    expect(done).to.include({ isError: true, content: "gone.ts: file not found\nsecret.ts: permission denied" });
    expect(branch(done.toolCall, "readLintsToolCall").result?.result).to.deep.include({ case: "error" });
  });

  it("refuses no paths, too many paths and non-string paths before any Exec", () => {
    expect(readLintsDriver.started(invocation("ReadLints", {}), ctx)).to.deep.equal({
      invalid: 'Invalid arguments for ReadLints: "paths" needs at least one file or directory.',
    });
    const many = Array.from({ length: MAX_LINT_PATHS + 1 }, (_, i) => `f${i}.ts`);
    expect(readLintsDriver.started(invocation("ReadLints", { paths: many }), ctx))
      .to.have.property("invalid")
      .that.contains(`at most ${MAX_LINT_PATHS}`);
    expect(readLintsDriver.started(invocation("ReadLints", { paths: [1] }), ctx))
      .to.have.property("invalid")
      .that.contains('"paths[0]" must be a string');
    expect(
      branch(startedCall(readLintsDriver.started(invocation("ReadLints", { paths: ["a"] }), ctx)), "readLintsToolCall")
        .args?.paths,
    ).to.deep.equal(["a"]);
  });

  it("a result of another kind, or with no branch, is a protocol error", () => {
    expect(protocolErrorOf(run(["a.ts"], [{ case: "readResult", value: {} }]).step)).to.equal(
      "ReadLints: expected diagnostics_result but the client sent read_result",
    );
    expect(protocolErrorOf(run(["a.ts"], [{ case: "diagnosticsResult", value: {} }]).step)).to.equal(
      "ReadLints: diagnostics_result has no result branch set",
    );
  });
});
