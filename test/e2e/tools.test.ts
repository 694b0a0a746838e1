// Wire-level e2e: client-executed tools over the real gateway (docs/protocol/cursor-tools.md §2, §2.5, §4;
// docs/protocol/cursor-run.md §9). The Read closed loop and a parallel Read + Grep batch answered out of order. Shell,
// edits and recorded provider fixtures are in the tools-*.test.ts files beside this one.
import { expect } from "chai";
import { createWorkspace } from "../support/client-workspace.js";
import { sleep } from "../support/util.js";
import {
  assertCleanSuccess,
  assertPrefix,
  checkpointShape,
  execs,
  useToolsRig,
  updates,
  SETTLED_ROUND_THEN_ANSWER,
  ROUND_CHECKPOINT,
} from "./tools-kit.js";

describe("e2e tools: Read closed loop and parallel batches", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools");

  it("runs one Read round trip: started → read_args → completed with typed result, then the next call sees the result", async () => {
    const fake = await rig.fake(
      {
        reasoning: "I should look at the file.",
        text: "Reading it.",
        toolCalls: [{ id: "call_read_1", name: "Read", args: { path: "src/a.txt" } }],
        usage: {
          prompt_tokens: 100,
          completion_tokens: 20,
          prompt_tokens_details: { cached_tokens: 40 },
          completion_tokens_details: { reasoning_tokens: 6 },
        },
      },
      {
        text: "It says hello.",
        usage: {
          prompt_tokens: 150,
          completion_tokens: 7,
          prompt_tokens_details: { cached_tokens: 90 },
          completion_tokens_details: { reasoning_tokens: 0 },
        },
      },
    );
    const workspace = createWorkspace({ "src/a.txt": "hello\nworld\n" });
    const t0 = BigInt(Date.now());
    const { client, run } = rig.start(fake, { text: "what is in src/a.txt?", workspace });
    await run.done;
    const t1 = BigInt(Date.now());

    expect(run.kinds()).to.deep.equal([
      "thinking_delta",
      "thinking_completed",
      "text_delta",
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      "kv_set",
      "kv_set",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);

    const [partial] = updates(run, "partialToolCall");
    const [started] = updates(run, "toolCallStarted");
    const [completed] = updates(run, "toolCallCompleted");
    expect(partial!.toolCall?.tool.case).to.equal("readToolCall");
    expect(started!.callId).to.equal("call_read_1");
    expect(started!.modelCallId).to.not.equal("");
    const startedTool = started!.toolCall!.tool;
    if (startedTool.case !== "readToolCall") expect.fail(`expected a read card, got ${startedTool.case}`);
    expect(startedTool.value.args?.path).to.equal("src/a.txt");
    expect(startedTool.value.result).to.equal(undefined);

    const [exec] = execs(run);
    expect(exec!.case).to.equal("readArgs");
    expect(exec!.value).to.include({ path: "src/a.txt", toolCallId: "call_read_1" });

    expect(completed!.callId).to.equal(started!.callId);
    expect(completed!.modelCallId).to.equal(started!.modelCallId);
    const done = completed!.toolCall!;
    // Real wall-clock times (docs/protocol/cursor-tools.md §2.5), not placeholders: inside the run's window, started ≤
    // completed.
    expect(
      done.startedAtMs! >= t0 && done.startedAtMs! <= done.completedAtMs! && done.completedAtMs! <= t1,
      `started ${done.startedAtMs} completed ${done.completedAtMs} outside [${t0}, ${t1}]`,
    ).to.equal(true);
    const doneTool = done.tool;
    if (doneTool.case !== "readToolCall") expect.fail(`expected a read card, got ${doneTool.case}`);
    expect(doneTool.value.args?.path).to.equal("src/a.txt");
    const result = doneTool.value.result?.result;
    if (result?.case !== "success") expect.fail(`expected a read success, got ${result?.case}`);
    expect(result.value).to.include({ path: "src/a.txt", totalLines: 3, fileSize: 12 });
    expect(result.value.output).to.deep.equal({ case: "content", value: "hello\nworld\n" });

    // The second model call carries the assistant tool call and its string result, after request 1 unchanged.
    const [first, second] = fake.requests;
    const added = assertPrefix(first!, second!);
    expect(added).to.deep.equal([
      {
        role: "assistant",
        content: "Reading it.",
        reasoning_content: "I should look at the file.",
        tool_calls: [
          { id: "call_read_1", type: "function", function: { name: "Read", arguments: '{"path":"src/a.txt"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_read_1", content: "hello\nworld\n" },
    ]);
    expect(fake.pending()).to.equal(0);

    // staged (pending 1) → settled (pending 0, assistant + result now roots) → final staged, settled, repeat.
    const shape = checkpointShape(run);
    expect(shape[0]!.pending).to.equal(1);
    expect(shape[1]!.pending).to.equal(0);
    expect(shape[1]!.roots).to.be.greaterThan(shape[0]!.roots);
    expect(shape.slice(2).map((s) => s.pending)).to.deep.equal([1, 0, 0]);
    // read_paths grows with the successful Read once its result is committed (docs/protocol/cursor-run.md §11).
    expect(run.checkpoints[0]!.readPaths).to.deep.equal([]);
    expect(run.checkpoints.slice(1).map((c) => c.readPaths)).to.deep.equal(Array(4).fill(["src/a.txt"]));

    // Usage: turn_ended sums both provider calls; used_tokens is the last call's prompt + completion
    // (docs/protocol/cursor-run.md §9, §11).
    const [turnEnded] = updates(run, "turnEnded");
    expect(turnEnded).to.deep.include({
      inputTokens: 250n,
      outputTokens: 27n,
      cacheReadTokens: 130n,
      reasoningTokens: 6n,
    });
    expect(turnEnded!.cacheWriteTokens).to.equal(undefined);
    expect(updates(run, "tokenDelta").map((t) => t.tokens)).to.deep.equal([20, 7]);
    expect(run.checkpoints[0]!.tokenDetails?.usedTokens).to.equal(120);
    expect(run.lastCheckpoint()!.tokenDetails?.usedTokens).to.equal(157);
    // The context breakdown: eight categories adding up exactly to used_tokens (docs/protocol/cursor-run.md §9).
    for (const checkpoint of run.checkpoints) {
      const { usedTokens, breakdown } = checkpoint.tokenDetails!;
      expect(breakdown!.categories).to.have.length(8);
      expect(breakdown!.totalUsedTokens).to.equal(usedTokens);
      expect(breakdown!.categories.reduce((sum, c) => sum + c.estimatedTokens, 0)).to.equal(usedTokens);
    }
  });

  it("answers a parallel Read + Grep out of order: completion order drives cards and results, one assistant message", async () => {
    const fake = await rig.fake(
      {
        toolCalls: [
          { id: "call_p_read", name: "Read", args: { path: "notes.md" } },
          { id: "call_p_grep", name: "Grep", args: { pattern: "TODO", output_mode: "files_with_matches" } },
        ],
        usage: { prompt_tokens: 50, completion_tokens: 10 },
      },
      { text: "Found it.", usage: { prompt_tokens: 80, completion_tokens: 3 } },
    );
    const workspace = createWorkspace({ "notes.md": "remember\n", "src/x.ts": "// TODO: fix\n" });
    const requestsAtSettledAcks: number[] = [];
    const { client, run } = rig.start(fake, {
      text: "look around",
      workspace,
      hooks: {
        // The Read (first Exec) is answered only after the Grep (second Exec) was answered.
        onExec: (_exec, { index, run: r }) => (index === 0 ? { holdUntil: r.execAnswered(1) } : undefined),
        // Hold the acks of the settled checkpoint's blobs: the provider must not be called before them
        // (docs/protocol/cursor-run.md §11).
        onKv: (_kv, { run: r }) => {
          if (r.checkpoints.length !== 1 || updates(r, "toolCallCompleted").length !== 2) return undefined;
          return { holdUntil: sleep(300).then(() => void requestsAtSettledAcks.push(fake.requests.length)) };
        },
      },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:read_args",
      "tool_call_started",
      "exec:grep_args",
      "tool_call_completed",
      "tool_call_completed",
      "kv_set",
      "kv_set",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);

    expect(updates(run, "toolCallStarted").map((u) => u.callId)).to.deep.equal(["call_p_read", "call_p_grep"]);
    expect(updates(run, "toolCallCompleted").map((u) => u.callId)).to.deep.equal(["call_p_grep", "call_p_read"]);
    expect(updates(run, "toolCallCompleted").map((u) => u.toolCall?.tool.case)).to.deep.equal([
      "grepToolCall",
      "readToolCall",
    ]);
    expect(execs(run).map((e) => e.case)).to.deep.equal(["readArgs", "grepArgs"]);

    // The settled checkpoint's acks were held 300 ms; the second model call had not been made when they left.
    expect(requestsAtSettledAcks.length).to.be.greaterThan(0);
    expect(
      requestsAtSettledAcks.every((n) => n === 1),
      `requests seen at ack time: ${requestsAtSettledAcks}`,
    ).to.equal(true);
    // One pending assistant message holds the whole batch (docs/protocol/cursor-tools.md §4.1: "pending assistant =
    // 1").
    expect(
      checkpointShape(run)
        .slice(0, 2)
        .map((s) => s.pending),
    ).to.deep.equal([1, 0]);
    const pendingBatch = run.checkpoints[0]!.pendingToolCalls[0]!;
    expect(pendingBatch.indexOf("call_p_read")).to.be.within(0, pendingBatch.indexOf("call_p_grep"));

    const [first, second] = fake.requests;
    const added = assertPrefix(first!, second!) as Array<Record<string, unknown>>;
    expect(added.map((m) => m.role)).to.deep.equal(["assistant", "tool", "tool"]);
    expect(added[0]).to.deep.equal({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_p_read", type: "function", function: { name: "Read", arguments: '{"path":"notes.md"}' } },
        {
          id: "call_p_grep",
          type: "function",
          function: { name: "Grep", arguments: '{"pattern":"TODO","output_mode":"files_with_matches"}' },
        },
      ],
    });
    expect(added.slice(1).map((m) => m.tool_call_id)).to.deep.equal(["call_p_grep", "call_p_read"]);
    expect(added[2]!.content).to.equal("remember\n");
    expect(added[1]!.content).to.include("/workspace/src/x.ts");
    expect(fake.pending()).to.equal(0);
  });
});
