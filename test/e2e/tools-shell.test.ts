// Wire-level e2e: the Shell tool (docs/protocol/cursor-tools.md §3.1, §5.5). Live stdout/stderr become
// tool_call_delta with call_id and model_call_id; ShellArgs carry block_until_ms as timeout with BACKGROUND
// behaviour; a failing exit reaches the model as an error result; a backgrounded shell is a success and is
// never aborted.
import { expect } from "chai";
import { TimeoutBehavior } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ShellArgs } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ShellScript, ShellStep } from "../support/client-workspace.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  useToolsRig,
  updates,
  SETTLED_ROUND_THEN_ANSWER,
  ROUND_CHECKPOINT,
} from "./tools-kit.js";

const scripts: Record<string, ShellStep[]> = {
  "npm run build": [
    { stdout: "compiling 3 files\n" },
    { stderr: "warning: unused import\n", delayMs: 20 },
    { stdout: "built in 0.4s\n", delayMs: 20 },
    { exit: 0, delayMs: 20 },
  ],
  "npm test": [{ stdout: "1 passing\n" }, { stderr: "1 failing\n" }, { exit: 1 }],
  "npm run dev": [{ stdout: "listening on :3000\n" }, { backgrounded: true, delayMs: 20 }],
};
const shell: ShellScript = (command) => scripts[command] ?? [{ stderr: `no script for ${command}\n`, exit: 127 }];

/** The ShellArgs the client was sent, in order. */
function shellArgs(run: Parameters<typeof execs>[0]): ShellArgs[] {
  return execs(run)
    .filter((e) => e.case === "shellStreamArgs")
    .map((e) => e.value as ShellArgs);
}

describe("e2e tools: Shell", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-shell");

  it("streams each stdout/stderr chunk as a tool_call_delta between shell_stream_args and tool_call_completed", async () => {
    const fake = await rig.fake(
      { toolCalls: [{ id: "call_sh_build", name: "Shell", args: { command: "npm run build", description: "Build" } }] },
      { text: "Built." },
    );
    const { client, run } = rig.start(fake, { text: "build it", shell });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:shell_stream_args",
      "tool_call_delta",
      "tool_call_delta",
      "tool_call_delta",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);

    const [started] = updates(run, "toolCallStarted");
    expect(started!.modelCallId).to.not.equal("");
    const deltas = updates(run, "toolCallDelta");
    expect(deltas.map((d) => [d.callId, d.modelCallId])).to.deep.equal(
      Array(3).fill(["call_sh_build", started!.modelCallId]),
    );
    expect(
      deltas.map((d) => {
        const shellDelta = d.toolCallDelta?.delta;
        if (shellDelta?.case !== "shellToolCallDelta") return undefined;
        return [shellDelta.value.delta.case, shellDelta.value.delta.value?.content];
      }),
    ).to.deep.equal([
      ["stdout", "compiling 3 files\n"],
      ["stderr", "warning: unused import\n"],
      ["stdout", "built in 0.4s\n"],
    ]);

    // No block_until_ms from the model: the protocol default, and the client backgrounds instead of killing
    // (docs/protocol/cursor-tools.md §5.5).
    const [args] = shellArgs(run);
    expect(args).to.include({
      command: "npm run build",
      toolCallId: "call_sh_build",
      timeout: 30_000,
      timeoutBehavior: TimeoutBehavior.BACKGROUND,
      hardTimeout: 86_400_000,
      closeStdin: true,
      description: "Build",
    });

    const [completed] = updates(run, "toolCallCompleted");
    expect(completed!.modelCallId).to.equal(started!.modelCallId);
    const tool = completed!.toolCall!.tool;
    if (tool.case !== "shellToolCall") expect.fail(`expected a shell card, got ${tool.case}`);
    expect(tool.value.result?.result.case).to.equal("success");
    expect(tool.value.result?.result.value).to.include({
      exitCode: 0,
      stdout: "compiling 3 files\nbuilt in 0.4s\n",
      stderr: "warning: unused import\n",
    });
    const toolMessage = assertPrefix(fake.requests[0]!, fake.requests[1]!)[1] as { role: string; content: string };
    expect(toolMessage.role).to.equal("tool");
    expect(toolMessage.content)
      .to.include("Exit code: 0")
      .and.include("compiling 3 files\nwarning: unused import\nbuilt in 0.4s\n");
  });

  it("turns exit code 1 into an error result the model sees, with block_until_ms as the ShellArgs timeout", async () => {
    const fake = await rig.fake(
      { toolCalls: [{ id: "call_sh_test", name: "Shell", args: { command: "npm test", block_until_ms: 12_345 } }] },
      { text: "One test fails." },
    );
    const { client, run } = rig.start(fake, { text: "run the tests", shell });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:shell_stream_args",
      "tool_call_delta",
      "tool_call_delta",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(shellArgs(run)[0]).to.include({ timeout: 12_345, timeoutBehavior: TimeoutBehavior.BACKGROUND });

    const tool = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    if (tool.case !== "shellToolCall") expect.fail(`expected a shell card, got ${tool.case}`);
    expect(tool.value.result?.result.case).to.equal("failure");
    expect(tool.value.result?.result.value).to.include({ exitCode: 1, stdout: "1 passing\n", stderr: "1 failing\n" });

    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!) as Array<{
      role: string;
      content: string;
      tool_call_id?: string;
    }>;
    expect(added.map((m) => m.role)).to.deep.equal(["assistant", "tool"]);
    expect(added[1]!.tool_call_id).to.equal("call_sh_test");
    expect(added[1]!.content).to.include("Exit code: 1").and.include("1 passing\n1 failing\n");
  });

  it("completes a backgrounded shell successfully and never aborts it, not even when the run ends", async () => {
    const fake = await rig.fake(
      { toolCalls: [{ id: "call_sh_dev", name: "Shell", args: { command: "npm run dev", block_until_ms: 0 } }] },
      { text: "The dev server is running." },
    );
    const { client, run } = rig.start(fake, { text: "start the dev server", shell });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:shell_stream_args",
      "tool_call_delta",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client); // includes: no abort frame, run.aborts empty
    expect(run.kinds()).to.not.include("abort");
    expect(shellArgs(run)[0]).to.include({ timeout: 0, timeoutBehavior: TimeoutBehavior.BACKGROUND });

    const tool = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    if (tool.case !== "shellToolCall") expect.fail(`expected a shell card, got ${tool.case}`);
    const result = tool.value.result!;
    expect(result).to.include({ isBackground: true, pid: 4242, terminalsFolder: "/workspace/.terminals" });
    expect(result.result.case).to.equal("success");
    expect(result.result.value).to.include({ shellId: 1, pid: 4242, stdout: "listening on :3000\n" });

    const toolMessage = assertPrefix(fake.requests[0]!, fake.requests[1]!)[1] as { content: string };
    expect(toolMessage.content)
      .to.include("Shell ID: 1")
      .and.include("PID: 4242")
      .and.include("/workspace/.terminals")
      .and.include("listening on :3000\n");
    expect(toolMessage.content).to.not.include("Exit code");
  });

  it("sends the conversation, the admin denylist and the model's output notification in ShellArgs", async () => {
    const fake = await rig.fake();
    const args = {
      command: "npm run dev",
      block_until_ms: 0,
      notify_on_output: { pattern: "listening on", reason: "the server is up", debounce_ms: 250 },
    };
    fake.enqueue({ toolCalls: [{ id: "call_sh_notify", name: "Shell", args }] }, { text: "Started." });
    const conversationId = `tools-shell-notify-${process.pid}`;
    const env = { workspacePaths: ["/workspace"], terminalsFolder: "/workspace/.terminals" };
    const requestContext = { env, adminCommandDenylist: ["rm -rf /"] };
    const { client, run } = rig.start(fake, { text: "start the server", shell, conversationId, requestContext });
    await run.done;
    assertCleanSuccess(run, client);

    const [sent] = shellArgs(run);
    expect(sent!.conversationId).to.equal(conversationId);
    expect(sent!.adminCommandDenylist).to.deep.equal(["rm -rf /"]);
    expect(sent!.outputNotification).to.include({ pattern: "listening on", reason: "the server is up", debounce: 250 });
    expect(sent!.smartModeApproval).to.equal(undefined);
  });

  it("smart-mode approval without its reason is an error result and no shell runs", async () => {
    const fake = await rig.fake();
    const args = { command: "npm run dev", request_smart_mode_approval: true };
    fake.enqueue({ toolCalls: [{ id: "call_sh_smart", name: "Shell", args }] }, { text: "Ok." });
    const { client, run } = rig.start(fake, { text: "start the server", shell });
    await run.done;
    assertCleanSuccess(run, client);
    expect(shellArgs(run)).to.deep.equal([]);
    expect(run.kinds()).to.include.members(["tool_call_started", "tool_call_completed"]);
    const toolMessage = assertPrefix(fake.requests[0]!, fake.requests[1]!)[1] as { content: string };
    expect(toolMessage.content).to.include('"smart_mode_block_reason" is required');
  });
});
