import type { MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ShellAbortReason, ShellBackgroundReason, TimeoutBehavior } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ShellStreamSchema, ToolCallDelta } from "../../proto/gen/agent/v1/agent_pb.js";
import { isBackgroundedShell, shellDriver } from "../../cursor/tools/shell.js";
import type { ShellState } from "../../cursor/tools/shell.js";
import type { DriverStep } from "../../cursor/tools/types.js";
import { CALL_ID, branch, clientMessage, completionOf, ctx, execOf, invocation, protocolErrorOf } from "./helpers.js";

type StreamEvent = MessageInitShape<typeof ShellStreamSchema>["event"];

const call = invocation("Shell", {
  command: "npm test",
  working_directory: "/repo",
  block_until_ms: 5000,
  description: "Run tests",
});

function stream(event: StreamEvent) {
  return clientMessage({ case: "shellStream", value: { event } });
}

/** Feeds events in order; returns every step. */
function run(events: StreamEvent[]): { steps: DriverStep<ShellState>[]; last: DriverStep<ShellState> } {
  let { state } = execOf(shellDriver.begin(call, ctx));
  const steps: DriverStep<ShellState>[] = [];
  for (const event of events) {
    const step = shellDriver.onExecMessage(call, state, stream(event));
    steps.push(step);
    if (step.kind !== "protocol_error") state = step.state;
  }
  return { steps, last: steps[steps.length - 1] };
}

function deltaText(delta: ToolCallDelta): { stream: string | undefined; content: string | undefined } {
  if (delta.delta.case !== "shellToolCallDelta") expect.fail(`expected a shell delta, got ${delta.delta.case}`);
  const d = delta.delta.value.delta;
  return { stream: d.case, content: d.value?.content };
}

const output: StreamEvent[] = [
  { case: "start", value: {} },
  { case: "stdout", value: { data: "compiling\n" } },
  { case: "stderr", value: { data: "warning: x\n" } },
  { case: "hookContext", value: { hookAdditionalContexts: [{ hookEventName: "post", content: "c" }] } },
  { case: "stdout", value: { data: "done\n" } },
];

describe("Shell driver", () => {
  it("sends shell_stream_args with the captured ShellArgs values", () => {
    expect(branch(shellDriver.placeholder(CALL_ID), "shellToolCall").args).to.equal(undefined);
    const { request } = execOf(shellDriver.begin(call, ctx));
    expect(request.case).to.equal("shellStreamArgs");
    expect(request.value).to.include({
      command: "npm test",
      workingDirectory: "/repo",
      timeout: 5000,
      timeoutBehavior: TimeoutBehavior.BACKGROUND,
      hardTimeout: 86_400_000,
      fileOutputThresholdBytes: 40_000n,
      closeStdin: true,
      description: "Run tests",
      toolCallId: CALL_ID,
    });
  });

  it("sends the conversation, the admin's denylist, output notification and smart-mode approval", () => {
    const args = {
      command: "npm run dev",
      notify_on_output: { pattern: "ready on", reason: "the server is up", debounce_ms: 500 },
      request_smart_mode_approval: true,
      smart_mode_block_reason: "starts a server",
    };
    const withDenylist = { ...ctx, adminCommandDenylist: ["rm -rf /"] };
    const { request } = execOf(shellDriver.begin(invocation("Shell", args), withDenylist));
    if (request.case !== "shellStreamArgs") expect.fail("expected shell_stream_args");
    expect(request.value.conversationId).to.equal(ctx.conversationId);
    expect(request.value.adminCommandDenylist).to.deep.equal(["rm -rf /"]);
    expect(request.value.outputNotification).to.include({
      pattern: "ready on",
      reason: "the server is up",
      debounce: 500,
    });
    expect(request.value.smartModeApproval).to.include({ requestId: CALL_ID, reason: "starts a server" });
    const plain = execOf(shellDriver.begin(invocation("Shell", { command: "ls" }), ctx)).request.value as {
      outputNotification?: unknown;
      smartModeApproval?: unknown;
      adminCommandDenylist: string[];
    };
    expect(plain.outputNotification).to.equal(undefined);
    expect(plain.smartModeApproval).to.equal(undefined);
    expect(plain.adminCommandDenylist).to.deep.equal([]);
  });

  it("refuses smart-mode approval without its reason and a notification without its pattern", () => {
    const noReason = { command: "x", request_smart_mode_approval: true };
    expect(shellDriver.started(invocation("Shell", noReason), ctx))
      .to.have.property("invalid")
      .that.contains('"smart_mode_block_reason" is required');
    const noPattern = { command: "x", notify_on_output: { reason: "r" } };
    expect(shellDriver.started(invocation("Shell", noPattern), ctx))
      .to.have.property("invalid")
      .that.contains('notify_on_output: "pattern" is required');
  });

  it("defaults block_until_ms to 30000 and keeps 0 as background-at-once", () => {
    const byDefault = execOf(shellDriver.begin(invocation("Shell", { command: "ls" }), ctx)).request.value as {
      timeout: number;
    };
    expect(byDefault.timeout).to.equal(30_000);
    const now = execOf(shellDriver.begin(invocation("Shell", { command: "srv", block_until_ms: 0 }), ctx)).request
      .value as { timeout: number };
    expect(now.timeout).to.equal(0);
  });

  it("rejects a missing command, a negative block_until_ms and an unknown permission", () => {
    expect(shellDriver.started(invocation("Shell", {}), ctx))
      .to.have.property("invalid")
      .that.contains('"command" is required');
    expect(shellDriver.started(invocation("Shell", { command: "x", block_until_ms: -5 }), ctx)).to.have.property(
      "invalid",
    );
    const perm = shellDriver.started(invocation("Shell", { command: "x", required_permissions: ["root"] }), ctx);
    expect(perm).to.have.property("invalid").that.contains("required_permissions[0]");
    const notify = shellDriver.started(
      invocation("Shell", { command: "x", notify_on_output: { pattern: "ready" } }),
      ctx,
    );
    expect(notify).to.have.property("invalid").that.contains('notify_on_output: "reason" is required');
  });

  it("start/hook_context wait; stdout/stderr become shell tool_call_delta chunks in order", () => {
    const { steps } = run(output);
    expect(steps.map((s) => s.kind)).to.deep.equal(["wait", "delta", "delta", "wait", "delta"]);
    const deltas = steps.flatMap((s) => (s.kind === "delta" ? [deltaText(s.delta)] : []));
    expect(deltas).to.deep.equal([
      { stream: "stdout", content: "compiling\n" },
      { stream: "stderr", content: "warning: x\n" },
      { stream: "stdout", content: "done\n" },
    ]);
  });

  it("exit 0 completes as success with the buffered output in text and typed ShellSuccess", () => {
    const { last } = run([...output, { case: "exit", value: { code: 0, cwd: "/repo" } }]);
    const done = completionOf(last);
    expect(done.isError).to.equal(false);
    expect(done.content).to.equal("Exit code: 0\n\ncompiling\nwarning: x\ndone\n");
    const result = branch(done.toolCall, "shellToolCall").result?.result;
    expect(result?.case).to.equal("success");
    expect(result?.value).to.include({
      exitCode: 0,
      stdout: "compiling\ndone\n",
      stderr: "warning: x\n",
      command: "npm test",
    });
    expect(isBackgroundedShell(done)).to.equal(false);
  });

  it("exit 1 completes as failure; an aborted exit 0 is a failure too", () => {
    const failed = completionOf(run([...output, { case: "exit", value: { code: 1 } }]).last);
    expect(failed.isError).to.equal(true);
    expect(failed.content.startsWith("Exit code: 1\n")).to.equal(true);
    expect(branch(failed.toolCall, "shellToolCall").result?.result).to.deep.include({ case: "failure" });
    const aborted = completionOf(
      run([{ case: "exit", value: { code: 0, aborted: true, abortReason: ShellAbortReason.USER_ABORT } }]).last,
    );
    expect(aborted.isError).to.equal(true);
    expect(aborted.content).to.equal("Command was aborted.\nExit code: 0\n\n(no output)");
  });

  it("backgrounded is a successful end naming shell id, pid, terminals folder and output so far", () => {
    const { last } = run([
      { case: "start", value: {} },
      { case: "stdout", value: { data: "Serving on :8000\n" } },
      {
        case: "backgrounded",
        value: {
          shellId: 4,
          pid: 9911,
          command: "npm test",
          workingDirectory: "/repo",
          reason: ShellBackgroundReason.TIMEOUT,
        },
      },
    ]);
    const done = completionOf(last);
    expect(done.isError).to.equal(false);
    expect(done.content).to.contain("Shell ID: 4");
    expect(done.content).to.contain("PID: 9911");
    expect(done.content).to.contain(`Terminals folder: ${ctx.terminalsFolder}`);
    expect(done.content).to.contain("Serving on :8000");
    const result = branch(done.toolCall, "shellToolCall").result;
    expect(result).to.include({ isBackground: true, terminalsFolder: ctx.terminalsFolder, pid: 9911 });
    expect(result?.result.value).to.include({ shellId: 4, stdout: "Serving on :8000\n" });
    expect(isBackgroundedShell(done)).to.equal(true);
  });

  it("rejected, permission_denied and sandbox_unsupported end the call as errors", () => {
    const rejected = completionOf(
      run([{ case: "rejected", value: { command: "rm -rf /", reason: "user declined" } }]).last,
    );
    expect(rejected).to.include({ isError: true, content: "Command was rejected: user declined" });
    expect(branch(rejected.toolCall, "shellToolCall").result?.result.case).to.equal("rejected");
    const denied = completionOf(run([{ case: "permissionDenied", value: { error: "read-only" } }]).last);
    expect(denied.isError).to.equal(true);
    expect(branch(denied.toolCall, "shellToolCall").result?.result.case).to.equal("permissionDenied");
    const sandbox = completionOf(
      run([{ case: "sandboxUnsupported", value: { sandboxPolicyType: "seatbelt", reason: "not available" } }]).last,
    );
    expect(sandbox.isError).to.equal(true);
    expect(sandbox.content).to.contain("seatbelt: not available");
    expect(branch(sandbox.toolCall, "shellToolCall").result?.result.case).to.equal("spawnError");
  });

  it("a message other than shell_stream is a protocol error", () => {
    const { state } = execOf(shellDriver.begin(call, ctx));
    const wrong = clientMessage({ case: "shellResult", value: { result: { case: "success", value: {} } } });
    expect(protocolErrorOf(shellDriver.onExecMessage(call, state, wrong))).to.equal(
      "Shell: expected shell_stream but the client sent shell_result",
    );
  });
});
