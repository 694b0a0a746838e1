// Wire-level e2e: Write and StrReplace (seed 003 §30; tool-wire-map §3.2). Content streams to the card while the
// model is still producing arguments; execution is a hidden read_args then write_args, both with the model's
// tool_call_id and each with its own Exec id; the written text is LF-normalised; a failed replacement never writes.
import { expect } from "chai";
import type { ReadArgs, WriteArgs } from "../../proto/gen/agent/v1/agent_pb.js";
import { createWorkspace } from "../support/client-workspace.js";
import { killAllGateways } from "../support/gateway-process.js";
import { assertCleanSuccess, assertPrefix, execs, startToolsRig, type ToolsRig, updates } from "./tools-kit.js";

describe("e2e tools: Write and StrReplace", function () {
  this.timeout(10_000);
  let rig: ToolsRig;
  before(async () => (rig = await startToolsRig("tools-edit")));
  afterEach(() => rig.closeFakes());
  after(async () => {
    await killAllGateways();
    await rig.close();
  });

  it("writes a new file: content deltas before started, hidden read then write with one tool_call_id, CRLF → LF", async () => {
    const fake = await rig.fake();
    const args = { path: "n.txt", contents: "one\r\ntwo\r\n" };
    fake.enqueue({ toolCalls: [{ id: "call_w", name: "Write", args }], chunkSize: 6 }, { text: "Created." });
    const workspace = createWorkspace({ "other.txt": "x\n" });
    const { client, run } = rig.start(fake, { text: "create n.txt", workspace });
    await run.done;

    console.log(JSON.stringify(run.kinds()));
    for (const u of updates(run, "partialToolCall")) console.log(JSON.stringify(u.argsTextDelta), u.toolCall?.tool.case, JSON.stringify(u.toolCall?.tool.value));
    for (const u of updates(run, "toolCallDelta")) console.log(JSON.stringify(u.toolCallDelta?.delta.value));
    assertCleanSuccess(run, client);
  });
});
