// A background child's progress in its parent's checkpoints (docs/protocol/cursor-run.md §13.2): what is durable of
// the child while it still runs, its final state after it finished, and the same entry built again by a gateway
// restarted on the same data dir from the stored histories alone (the client's checkpoint no longer holds it).
import { clone } from "@bufbuild/protobuf";
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { progressOf, startCompletionRun, subagentHooks } from "../support/subagent-client.js";
import { MODEL } from "./tools-kit.js";

const SLOW = 30_000;

describe("subagent progress in the parent's checkpoints across a restart", function () {
  this.timeout(90_000);
  const fakes: FakeOpenAI[] = [];
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-subagents-restart-"));
    fakes.push(await startFakeOpenAI(), await startFakeOpenAI());
  });
  after(async () => {
    await killAllGateways();
    await Promise.all(fakes.map((f) => f.close()));
    await rm(dataDir, { recursive: true, force: true });
  });
  const startGateway = (): Promise<GatewayProcess> => startGatewayProcess({ dataDir, config: { models: [] } });

  it("files what the running child has committed, then its final state, and rebuilds it after a restart", async () => {
    const [parentFake, childFake] = fakes as [FakeOpenAI, FakeOpenAI];
    const credentials = { apiKey: "sk-e2e-subagent", baseUrl: parentFake.baseUrl };
    const conversationId = `subagents-restart-${process.pid}`;
    let parentEnded!: () => void;
    let released!: () => void;
    const step = (args: object) => ({ id: "child_step", name: "UpdateCurrentStep", args });
    childFake.enqueue(
      { toolCalls: [step({ current_step: "Scanning" })], holdUntil: new Promise<void>((r) => (parentEnded = r)) },
      {
        toolCalls: [step({ current_step: "Writing", final_summary: "Scanned 3 files", completed_subtitle: "3 files" })],
        holdUntil: new Promise<void>((r) => (released = r)),
      },
      { text: "Scanned." },
    );
    const task = { description: "Scan", prompt: "Scan the sources.", run_in_background: true };
    parentFake.enqueue(
      { toolCalls: [{ id: "call_bg", name: "Task", args: task }] },
      { text: "Started." },
      { text: "Still scanning." },
      { text: "Noted." },
      { text: "Summarized." },
    );

    const gw1 = await startGateway();
    const client1 = new CursorClient(gw1.url, {});
    let family!: ReturnType<typeof subagentHooks>;
    const parent = client1.startRun({
      conversationId,
      modelId: MODEL,
      text: "Scan in the background.",
      credentials,
      hooks: { onExec: (exec, ctx) => family.hooks.onExec!(exec, ctx) },
    });
    family = subagentHooks(
      client1,
      () => parent,
      () => ({ fake: childFake, finalMessage: "-" }),
    );
    expect(await parent.done).to.deep.equal({ ok: true });
    // The child had committed nothing yet: no entry.
    expect(progressOf(parent.lastCheckpoint()!)).to.deep.equal({});
    parentEnded();

    // Its first round is settled (committed before its next model call): a parent turn now files that step.
    await childFake.waitForRequests(2, SLOW);
    const status = client1.startRun({
      conversationId,
      modelId: MODEL,
      text: "How far is it?",
      checkpoint: parent.lastCheckpoint()!,
      credentials,
    });
    expect(await status.done).to.deep.equal({ ok: true });
    expect(progressOf(status.lastCheckpoint()!)).to.deep.equal({ call_bg: [[["Scanning", 1]], undefined, undefined] });

    released();
    const child = family.children[0]!;
    expect(await child.run.done).to.deep.equal({ ok: true });
    const completion = startCompletionRun(client1, {
      conversationId,
      modelId: MODEL,
      fake: parentFake,
      checkpoint: status.lastCheckpoint()!,
      finished: [{ child, detail: "Scanned." }],
    });
    expect(await completion.done).to.deep.equal({ ok: true });
    const final = {
      call_bg: [
        [
          ["Scanning", 1],
          ["Writing", 2],
        ],
        "Scanned 3 files",
        "3 files",
      ],
    };
    expect(progressOf(completion.lastCheckpoint()!)).to.deep.equal(final);
    expect(client1.violations()).to.deep.equal([]);
    await gw1.stop("SIGKILL");

    // A fresh gateway on the same data dir, and a checkpoint that lost the entry: it is folded again from the store.
    const gw2 = await startGateway();
    const client2 = new CursorClient(gw2.url, {});
    for (const data of client1.blobs.values()) client2.putBlob(data);
    const lost = clone(ConversationStateStructureSchema, completion.lastCheckpoint()!);
    lost.communicateUpdateStatesByParentToolCallId = {};
    const next = client2.startRun({
      conversationId,
      modelId: MODEL,
      text: "Summarize.",
      checkpoint: lost,
      credentials,
    });
    expect(await next.done).to.deep.equal({ ok: true });
    expect(progressOf(next.lastCheckpoint()!)).to.deep.equal(final);
    expect(parentFake.requests).to.have.length(5);
    await gw2.stop();
  });
});
