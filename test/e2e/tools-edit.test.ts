// Wire-level e2e: Write and StrReplace (docs/protocol/cursor-tools.md §5.6). Content streams to the card while the
// model is still producing arguments; execution is a hidden read_args then write_args, both with the model's
// tool_call_id and each with its own Exec id; the written text is LF-normalised; a failed replacement never writes.
import { expect } from "chai";
import type { ReadArgs, WriteArgs } from "../../proto/gen/agent/v1/agent_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  useToolsRig,
  updates,
  SETTLED_ROUND_THEN_ANSWER,
  ROUND_CHECKPOINT,
} from "./tools-kit.js";

describe("e2e tools: Write and StrReplace", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-edit");

  it("writes a new file: content deltas before started, hidden read then write with one tool_call_id, CRLF → LF", async () => {
    const fake = await rig.fake();
    // docs/protocol/cursor-tools.md §2.6: the tool_call_id is opaque and may hold a real newline; it is reused byte for
    // byte everywhere.
    const callId = "call_w\nfc_1_0";
    // 4-character argument pieces: '{"pa' 'th":' '"n.t' 'xt",' '"con' 'tent' 's":"' 'one\' 'r\nt' 'wo\r' '\n"}' —
    // an escape split across pieces, and a CR at the end of a piece whose LF comes in the next one.
    const args = { path: "n.txt", contents: "one\r\ntwo\r\n" };
    fake.enqueue({ toolCalls: [{ id: callId, name: "Write", args }], chunkSize: 4 }, { text: "Created." });
    const workspace = createWorkspace({ "other.txt": "x\n" });
    const { client, run } = rig.start(fake, { text: "create n.txt", workspace });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      "partial_tool_call", // placeholder edit card as soon as the name is known
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call", // 'xt",' completes path → partial with EditArgs.path
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "tool_call_delta", // 'one\'
      "partial_tool_call",
      "tool_call_delta", // 'r\nt'
      "partial_tool_call",
      "tool_call_delta", // 'wo\r'
      "partial_tool_call",
      "tool_call_delta", // '\n"}'
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:read_args",
      "exec:write_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);

    // Live content: decoded, LF-normalised, the pending CR held until its LF arrived (no doubled newline).
    const deltas = updates(run, "toolCallDelta");
    expect(deltas.every((d) => d.callId === callId && d.modelCallId !== "")).to.equal(true);
    expect(
      deltas.map((d) =>
        d.toolCallDelta?.delta.case === "editToolCallDelta" ? d.toolCallDelta.delta.value.streamContentDelta : "?",
      ),
    ).to.deep.equal(["one", "\nt", "wo", "\n"]);
    const partials = updates(run, "partialToolCall");
    expect(partials.every((p) => p.toolCall?.tool.case === "editToolCall" && p.callId === callId)).to.equal(true);
    expect(partials.map((p) => p.argsTextDelta).join("")).to.equal(JSON.stringify(args));
    const pathPartials = partials.filter(
      (p) => p.toolCall?.tool.case === "editToolCall" && p.toolCall.tool.value.args?.path,
    );
    expect(pathPartials).to.have.length(1);

    const [started] = updates(run, "toolCallStarted");
    expect([started!.callId, started!.toolCall?.toolCallId]).to.deep.equal([callId, callId]);
    expect(started!.toolCall?.tool.case === "editToolCall" && started!.toolCall.tool.value.args).to.deep.include({
      path: "n.txt",
      streamContent: "one\ntwo\n",
    });

    // Hidden read (not found → empty "before"), then write: same tool_call_id, different Exec ids
    // (docs/protocol/cursor-tools.md §5.6).
    const [read, write] = execs(run);
    expect(read!.case).to.equal("readArgs");
    expect(write!.case).to.equal("writeArgs");
    expect(read!.id).to.not.equal(write!.id);
    expect((read!.value as ReadArgs).toolCallId).to.equal(callId);
    expect(write!.value as WriteArgs).to.include({ path: "n.txt", fileText: "one\ntwo\n", toolCallId: callId });
    expect(client.workspace.files.get("/workspace/n.txt")).to.equal("one\ntwo\n");

    const [completed] = updates(run, "toolCallCompleted");
    expect([completed!.callId, completed!.toolCall?.toolCallId]).to.deep.equal([callId, callId]);
    const tool = completed!.toolCall!.tool;
    if (tool.case !== "editToolCall") expect.fail(`expected an edit card, got ${tool.case}`);
    const result = tool.value.result!.result;
    if (result.case !== "success") expect.fail(`expected success, got ${result.case}`);
    expect(result.value).to.include({
      path: "n.txt",
      linesAdded: 2,
      linesRemoved: 0,
      beforeFullFileContent: "",
      afterFullFileContent: "one\ntwo\n",
    });
    expect(result.value.diffString).to.include("+one\n+two\n");
    expect(result.value.diffString).to.not.include("\r");

    const toolMessage = assertPrefix(fake.requests[0]!, fake.requests[1]!)[1] as {
      role: string;
      content: string;
      tool_call_id: string;
    };
    expect(toolMessage).to.deep.include({ role: "tool", tool_call_id: callId });
    expect(toolMessage.content).to.match(/^Created n\.txt/);
  });

  it("replaces exactly one occurrence in an existing file and writes the whole new text back", async () => {
    const fake = await rig.fake();
    const args = { path: "src/app.ts", old_string: "const b = 2;", new_string: "const b = 3;\r\nconst c = 4;" };
    fake.enqueue({ toolCalls: [{ id: "call_sr", name: "StrReplace", args }] }, { text: "Changed." });
    const before = "const a = 1;\nconst b = 2;\nconst bb = 22;\n";
    const workspace = createWorkspace({ "src/app.ts": before });
    const { client, run } = rig.start(fake, { text: "bump b", workspace });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      // placeholder, the whole argument text, the path partial, then new_string as stream content
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "tool_call_delta",
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:read_args",
      "exec:write_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);

    const after = "const a = 1;\nconst b = 3;\nconst c = 4;\nconst bb = 22;\n";
    const [read, write] = execs(run);
    expect((read!.value as ReadArgs).toolCallId).to.equal("call_sr");
    expect(write!.value as WriteArgs).to.include({ path: "src/app.ts", fileText: after, toolCallId: "call_sr" });
    expect(read!.id).to.not.equal(write!.id);
    expect(client.workspace.files.get("/workspace/src/app.ts")).to.equal(after);

    const tool = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    if (tool.case !== "editToolCall") expect.fail(`expected an edit card, got ${tool.case}`);
    expect(tool.value.args).to.deep.include({ path: "src/app.ts", streamContent: "const b = 3;\nconst c = 4;" });
    const result = tool.value.result!.result;
    if (result.case !== "success") expect.fail(`expected success, got ${result.case}`);
    expect(result.value).to.include({
      linesAdded: 2,
      linesRemoved: 1,
      beforeFullFileContent: before,
      afterFullFileContent: after,
    });
    expect(result.value.diffString).to.include("-const b = 2;\n+const b = 3;\n+const c = 4;\n");
  });

  it("fails a StrReplace whose old_string is not in the file: error result, no write_args, file untouched", async () => {
    const fake = await rig.fake();
    const args = { path: "src/app.ts", old_string: "const z = 9;", new_string: "const z = 10;" };
    fake.enqueue({ toolCalls: [{ id: "call_sr_miss", name: "StrReplace", args }] }, { text: "It is not there." });
    const before = "const a = 1;\n";
    const workspace = createWorkspace({ "src/app.ts": before });
    const { client, run } = rig.start(fake, { text: "change z", workspace });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      // placeholder, the whole argument text, the path partial, then new_string as stream content
      "partial_tool_call",
      "partial_tool_call",
      "partial_tool_call",
      "tool_call_delta",
      "token_delta",
      ...ROUND_CHECKPOINT,
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(execs(run).map((e) => e.case)).to.deep.equal(["readArgs"]);
    expect(client.workspace.files.get("/workspace/src/app.ts")).to.equal(before);

    const tool = updates(run, "toolCallCompleted")[0]!.toolCall!.tool;
    if (tool.case !== "editToolCall") expect.fail(`expected an edit card, got ${tool.case}`);
    const result = tool.value.result!.result;
    expect(result.case).to.equal("error");
    const toolMessage = assertPrefix(fake.requests[0]!, fake.requests[1]!)[1] as {
      tool_call_id: string;
      content: string;
    };
    expect(toolMessage.tool_call_id).to.equal("call_sr_miss");
    expect(toolMessage.content).to.include("old_string was not found in src/app.ts");
  });
});
