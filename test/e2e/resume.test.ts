// resume_action (docs/protocol/cursor-run.md §11): Cursor comes back after a broken stream with the latest eligible
// checkpoint and a resume_action instead of a new message. If that checkpoint holds a pending tool round, the gateway
// runs the round's tools again and only then calls the model; the turn continues where the checkpoint left it.
import { expect } from "chai";
import { fromBinary } from "@bufbuild/protobuf";
import { ConversationTurnStructureSchema, type ConversationStateStructure } from "../../proto/gen/agent/v1/agent_pb.js";
import { createWorkspace, type Workspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import type { FakeOpenAI } from "../support/fake-openai.js";
import { assertEndStreamInvariants, blobHex } from "../support/observed-frames.js";
import { waitUntil } from "../support/util.js";
import { MODEL, SETTLED_ROUND_THEN_ANSWER, assertPrefix, useToolsRig } from "./tools-kit.js";

describe("e2e: resume_action continues a turn from the client's checkpoint", function () {
  this.timeout(15_000);
  const rig = useToolsRig("resume");

  /** Cursor after a break: a new request with the same blob store, the chosen checkpoint and a resume_action. */
  function resumeFrom(
    earlier: CursorClient,
    checkpoint: ConversationStateStructure,
    opts: { conversationId: string; fake: FakeOpenAI; workspace?: Workspace },
  ) {
    const client = new CursorClient(rig.gw.url, { ...(opts.workspace ? { workspace: opts.workspace } : {}) });
    for (const data of earlier.blobs.values()) client.putBlob(data);
    const resumed = client.startRun({
      conversationId: opts.conversationId,
      modelId: MODEL,
      resume: true,
      checkpoint,
      credentials: { apiKey: "sk-e2e-tools", baseUrl: opts.fake.baseUrl },
    });
    return { client, resumed };
  }

  it("re-runs the pending tool round without asking the model again, then finishes the same turn", async () => {
    const fake = await rig.fake(
      {
        text: "Let me look.",
        toolCalls: [{ id: "call_r1", name: "Read", args: { path: "notes.txt" } }],
        usage: { prompt_tokens: 50, completion_tokens: 9 },
      },
      { text: "It says hi.", usage: { prompt_tokens: 80, completion_tokens: 4 } },
    );
    const workspace = createWorkspace({ "notes.txt": "hi\n" });
    // The first run's exec is never answered: its stream is what a broken connection leaves behind.
    const never = new Promise<void>(() => {});
    const conversationId = `resume-round-${process.pid}`;
    const first = rig.start(fake, {
      conversationId,
      text: "what is in notes.txt?",
      workspace,
      hooks: { onExec: () => ({ holdUntil: never }) },
    });
    await first.run.waitForFrame("exec:read_args");
    const staged = first.run.lastCheckpoint()!;
    expect(staged.pendingToolCalls).to.have.length(1);

    const { client, resumed } = resumeFrom(first.client, staged, { conversationId, fake, workspace });
    const end = await resumed.done;
    expect(end).to.deep.equal({ ok: true });

    // The older run of the conversation was superseded (its pending exec aborted); the resumed one went straight to
    // the tools: the turn blob is rewritten for this request, then staged again before the Read runs.
    expect((await first.run.done).ok).to.equal(false);
    expect(first.run.aborts).to.have.length(1);
    expect(resumed.kinds()).to.deep.equal([
      "kv_set",
      "checkpoint",
      "tool_call_started",
      "exec:read_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    // Blobs of the first run are the client's already: only the new ones were SET, each before its checkpoint.
    assertEndStreamInvariants(resumed.frames);
    expect(client.violations()).to.deep.equal([]);

    // Two provider calls in all: the first run's, and one after the resumed tools (the round was not re-asked).
    expect(fake.requests).to.have.length(2);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!) as Array<Record<string, unknown>>;
    expect(added.map((m) => m.role)).to.deep.equal(["assistant", "tool"]);
    expect(added[1]).to.deep.include({ tool_call_id: "call_r1", content: "hi\n" });

    // Same conversation turn, grown: the first run's steps are kept and the tool and final steps are appended.
    const last = resumed.lastCheckpoint()!;
    expect(last.turns).to.have.length(staged.turns.length);
    const stepsOf = (turnId: Uint8Array, blobs: ReadonlyMap<string, Uint8Array>) => {
      const turn = fromBinary(ConversationTurnStructureSchema, blobs.get(blobHex(turnId))!).turn;
      return turn.case === "agentConversationTurn" ? turn.value.steps.map(blobHex) : [];
    };
    const before = stepsOf(staged.turns.at(-1)!, first.client.blobs);
    const after = stepsOf(last.turns.at(-1)!, client.blobs);
    expect(after.slice(0, before.length)).to.deep.equal(before);
    expect(after.length).to.equal(before.length + 2);
    expect(last.pendingToolCalls).to.deep.equal([]);
  });

  it("without a pending round, calls the model again on exactly the history the checkpoint holds", async () => {
    const fake = await rig.fake(
      { toolCalls: [{ id: "call_r2", name: "Read", args: { path: "a.txt" } }] },
      { hang: true },
      { text: "continued" },
    );
    const workspace = createWorkspace({ "a.txt": "A\n" });
    const conversationId = `resume-plain-${process.pid}`;
    const first = rig.start(fake, { conversationId, text: "read a.txt", workspace });
    await fake.waitForRequests(2);
    // The settled checkpoint (pending 0) is the last eligible one before the stream broke (docs/protocol/cursor-run.md
    // §11). It is published before the second provider call starts, but the client may read it just after the provider
    // saw that call.
    await waitUntil(
      () => first.run.lastCheckpoint()?.pendingToolCalls.length === 0,
      10_000,
      () => "no settled checkpoint",
    );
    const eligible = first.run.lastCheckpoint()!;
    expect(eligible.pendingToolCalls).to.deep.equal([]);
    const { client, resumed } = resumeFrom(first.client, eligible, { conversationId, fake, workspace });
    expect(await resumed.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(resumed.frames);
    expect(client.violations()).to.deep.equal([]);
    expect(resumed.kinds()[0]).to.equal("text_delta");
    // No new user message: the resumed call repeats the interrupted one byte for byte.
    expect(JSON.stringify(fake.requests[2]!.body.messages)).to.equal(JSON.stringify(fake.requests[1]!.body.messages));
  });

  it("refuses a checkpoint whose pending entry is not a tool round", async () => {
    const fake = await rig.fake({ text: "done" });
    const conversationId = `resume-final-${process.pid}`;
    const first = rig.start(fake, { conversationId, text: "hi" });
    await first.run.done;
    // The transitional checkpoint after turn_ended holds the final answer, not tool calls: not resumable.
    const transitional = first.run.checkpoints[0]!;
    const { resumed } = resumeFrom(first.client, transitional, { conversationId, fake });
    expect(await resumed.done).to.deep.include({
      ok: false,
      code: "invalid_argument",
      message: "the checkpoint's pending tool calls are not an assistant tool round",
    });
  });

  it("refuses a resume whose checkpoint has no turn", async () => {
    const fake = await rig.fake();
    const { run } = rig.start(fake, { text: "", resume: true });
    const end = await run.done;
    expect(end).to.deep.include({ ok: false, code: "invalid_argument" });
    expect(run.kinds()).to.deep.equal(["end:invalid_argument"]);
  });
});
