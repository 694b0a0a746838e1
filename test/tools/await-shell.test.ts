// AwaitShell (docs/protocol/cursor-tools.md §5.13): it waits through the client, reading the shell's terminal file
// with hidden read_args and pausing between looks until the pattern matches, the shell exits or the budget is spent.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ReadResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { awaitShellDriver, readTerminalFile } from "../../cursor/tools/await-shell.js";
import { DRIVER_PAUSE_MS, type DriverStep } from "../../cursor/tools/types.js";
import { branch, CALL_ID, clientMessage, completionOf, ctx, execOf, invocation } from "./helpers.js";

const FILE = `${ctx.terminalsFolder}/7.txt`;
const running = "---\npid: 4242\ncwd: /repo\nlast_command: npm run dev\n---\nstarting\n";
const exited = "---\npid: 4242\ncwd: /repo\nlast_command: npm test\nlast_exit_code: 1\n---\n1 failing\n";
const contentOf = (text: string) =>
  clientMessage({
    case: "readResult",
    value: create(ReadResultSchema, {
      result: { case: "success", value: { output: { case: "content", value: text } } },
    }),
  });

/** Answers every look with the next text until the driver completes; returns the completion and the pauses. */
function drive(args: Record<string, unknown>, texts: string[]) {
  const call = invocation("AwaitShell", args);
  let step: DriverStep<unknown> = awaitShellDriver.begin(call, ctx) as DriverStep<unknown>;
  let pauses = 0;
  for (const text of texts) {
    const { request, state } = execOf(step);
    expect(request).to.deep.include({ case: "readArgs" });
    expect(request.value).to.include({ path: FILE, toolCallId: CALL_ID });
    step = awaitShellDriver.onExecMessage(call, state as never, contentOf(text)) as DriverStep<unknown>;
    if (step.kind !== "pause") break;
    pauses++;
    step = awaitShellDriver.onResume!(call, step.state as never) as DriverStep<unknown>;
  }
  return { done: completionOf(step), pauses };
}

describe("AwaitShell driver", () => {
  it("reads the terminal file's header and output", () => {
    expect(readTerminalFile(exited)).to.deep.equal({ exitCode: 1, output: "1 failing\n" });
    expect(readTerminalFile(running)).to.deep.equal({ output: "starting\n" });
    expect(readTerminalFile("no header")).to.deep.equal({ output: "no header" });
  });

  it("keeps looking until the pattern matches, then completes with the match", () => {
    const ready = `${running}ready on :3000\n`;
    const { done, pauses } = drive({ shell_id: "7", pattern: "ready on :\\d+" }, [running, running, ready]);
    expect(pauses).to.equal(2);
    const result = branch(done.toolCall, "awaitToolCall").result?.result;
    if (result?.case !== "complete") expect.fail(`expected complete, got ${result?.case}`);
    expect(result.value).to.include({ taskId: "7", regexRequested: true, regexMatch: "ready on :3000" });
    expect(result.value.runtimeMs).to.equal(BigInt(2 * DRIVER_PAUSE_MS));
    expect(done.isError).to.equal(false);
    expect(done.content).to.include("matched /ready on :\\d+/").and.include("ready on :3000");
  });

  it("completes with the exit code once the header shows one", () => {
    const { done } = drive({ shell_id: "7" }, [running, exited]);
    const result = branch(done.toolCall, "awaitToolCall").result?.result;
    if (result?.case !== "complete") expect.fail("expected complete");
    expect(result.value.exitCode).to.equal(1);
    expect(done.content).to.include("exited with code 1").and.include("1 failing");
  });

  it("answers still_running once the budget is spent (in whole pauses), never earlier", () => {
    const { done, pauses } = drive({ shell_id: "7", block_until_ms: 1200 }, Array(10).fill(running));
    expect(pauses, "1200 ms rounded up to whole pauses").to.equal(3);
    const result = branch(done.toolCall, "awaitToolCall").result?.result;
    expect(result?.case).to.equal("stillRunning");
    expect(done.content).to.include("still running after 1.5 s");
    const now = drive({ shell_id: "7", block_until_ms: 0 }, [running]);
    expect(branch(now.done.toolCall, "awaitToolCall").result?.result.case).to.equal("stillRunning");
    expect(now.pauses).to.equal(0);
  });

  it("a shell id with no terminal file is an error result for the model", () => {
    const call = invocation("AwaitShell", { shell_id: "99" });
    const { state } = execOf(awaitShellDriver.begin(call, ctx));
    const missing = clientMessage({
      case: "readResult",
      value: create(ReadResultSchema, { result: { case: "fileNotFound", value: {} } }),
    });
    const done = completionOf(awaitShellDriver.onExecMessage(call, state, missing));
    expect(done.isError).to.equal(true);
    expect(branch(done.toolCall, "awaitToolCall").result?.result.case).to.equal("error");
    expect(done.content).to.include("No shell 99");
  });

  it("refuses a missing or path-like shell id, an invalid pattern and a budget over ten minutes", () => {
    for (const [args, fragment] of [
      [{}, '"shell_id" is required'],
      [{ shell_id: "../../etc/passwd" }, '"shell_id" must be a shell id'],
      [{ shell_id: "7", pattern: "(" }, '"pattern" is not a valid regular expression'],
      [{ shell_id: "7", block_until_ms: 600_001 }, '"block_until_ms" must be between 0 and 600000'],
    ] as const) {
      const started = awaitShellDriver.started(invocation("AwaitShell", args), ctx);
      if (!("invalid" in started)) expect.fail(`expected ${JSON.stringify(args)} to be refused`);
      expect(started.invalid).to.include(fragment);
    }
  });

  it("without a terminals folder there is nothing to read: an error result", () => {
    const done = completionOf(
      awaitShellDriver.begin(invocation("AwaitShell", { shell_id: "7" }), { conversationId: "c" }),
    );
    expect(done.isError).to.equal(true);
    expect(done.content).to.include("terminals folder");
  });
});
