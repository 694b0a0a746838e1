// Wire-level e2e: AwaitShell waits for a backgrounded shell through the client (docs/protocol/cursor-tools.md
// §5.13): hidden read_args of <terminals folder>/<shell id>.txt on the call's own tool_call_id, a pause between two
// looks, and a typed AwaitResult once the shell's header shows its exit code.
import { expect } from "chai";
import { createWorkspace } from "../support/client-workspace.js";
import { DRIVER_PAUSE_MS } from "../../cursor/tools/types.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  SETTLED_ROUND_THEN_ANSWER,
  updates,
  useToolsRig,
} from "./tools-kit.js";

const TERMINALS = "/home/u/.cursor/projects/p/terminals";
const requestContext = { env: { terminalsFolder: TERMINALS, workspacePaths: ["/workspace"] } };
const header = (exit?: number) =>
  `---\npid: 4242\ncwd: /workspace\nlast_command: npm test\n${exit === undefined ? "" : `last_exit_code: ${exit}\n`}---\n`;
const STAGED = [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
];

describe("e2e tools: AwaitShell waits for a backgrounded shell through the client", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-await");

  it("reads the terminal file, pauses, reads again, and completes when the shell has exited", async () => {
    const fake = await rig.fake(
      { text: "Waiting.", toolCalls: [{ id: "call_await_1", name: "AwaitShell", args: { shell_id: "7" } }] },
      { text: "The tests failed once." },
    );
    const workspace = createWorkspace({ [`${TERMINALS}/7.txt`]: `${header()}running 12 tests\n` });
    let reads = 0;
    const { client, run } = rig.start(fake, {
      text: "wait for the tests",
      workspace,
      requestContext,
      hooks: {
        onExec(exec) {
          // The shell finishes between the first and the second look.
          if (exec.message.case === "readArgs" && ++reads === 2)
            workspace.files.set(`${TERMINALS}/7.txt`, `${header(1)}running 12 tests\n1 failing\n`);
          return undefined;
        },
      },
    });
    const started = Date.now();
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED,
      "tool_call_started",
      "exec:read_args",
      "exec:read_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(Date.now() - started, "it paused between the two looks").to.be.at.least(DRIVER_PAUSE_MS);
    const looks = execs(run);
    expect(looks.map((e) => e.id)).to.deep.equal([1, 2]);
    for (const look of looks) expect(look.value).to.include({ path: `${TERMINALS}/7.txt`, toolCallId: "call_await_1" });

    const card = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    if (card.case !== "awaitToolCall") expect.fail(`expected an await card, got ${card.case}`);
    expect(card.value.args).to.include({ taskId: "7", blockUntilMs: 30_000 });
    const result = card.value.result?.result;
    if (result?.case !== "complete") expect.fail(`expected complete, got ${result?.case}`);
    expect(result.value).to.include({ taskId: "7", exitCode: 1, outputFilePath: `${TERMINALS}/7.txt` });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    const content = String((added[1] as { content: string }).content);
    expect(content).to.include("Shell 7 exited with code 1").and.include("1 failing");
  });

  it("a shell id with no terminal file ends the call with an error the model reads", async () => {
    const fake = await rig.fake(
      { text: "Waiting.", toolCalls: [{ id: "call_await_2", name: "AwaitShell", args: { shell_id: "99" } }] },
      { text: "That shell does not exist." },
    );
    const { client, run } = rig.start(fake, { text: "wait", requestContext });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED,
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const card = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    expect(card.case === "awaitToolCall" && card.value.result?.result.case).to.equal("error");
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(String((added[1] as { content: string }).content)).to.include(`No shell 99: ${TERMINALS}/99.txt`);
  });
});
