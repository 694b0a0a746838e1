// Wire-level: editing an earlier message branches from that message's anchor (docs/protocol/cursor-run.md §12.1).
// Cursor re-sends the edited message with its old message_id and its latest checkpoint; the gateway cuts the history
// back to the checkpoint the message was first sent on, across a restart (anchors are stored), and the conversation
// continues prefix-stable on the new branch.
import { expect } from "chai";
import { useStoreGateway } from "./store-gateway-kit.js";
import { randomUUID } from "node:crypto";
import type { AgentRunRequest } from "../../proto/gen/agent/v1/agent_pb.js";
import { CursorClient } from "../support/cursor-client.js";

const MODEL_ID = "byok-e2e-edit";

const withMessageId = (messageId: string) => (r: AgentRunRequest) => {
  const action = r.action?.action;
  if (action?.case !== "userMessageAction" || !action.value.userMessage) throw new Error("not a user message run");
  action.value.userMessage.messageId = messageId;
};

describe("e2e: an edited message branches from its anchor", function () {
  this.timeout(60_000);
  const rig = useStoreGateway("edit", { id: MODEL_ID, apiKey: "sk-e2e-edit" });

  it("cuts the history back to the edited message, after a restart too, and continues on the new branch", async () => {
    const gw = await rig.start();
    const client = new CursorClient(gw.url);
    const conversationId = `edit-${randomUUID()}`;
    const turn = (
      c: CursorClient,
      messageId: string,
      text: string,
      checkpoint?: AgentRunRequest["conversationState"],
    ) => c.startRun({ conversationId, modelId: MODEL_ID, text, customize: withMessageId(messageId), checkpoint });

    rig.fake.enqueue({ text: "answer one" }, { text: "answer two" });
    const one = turn(client, "m1", "question one");
    expect(await one.done).to.deep.equal({ ok: true });
    const two = turn(client, "m2", "question two", one.lastCheckpoint());
    expect(await two.done).to.deep.equal({ ok: true });
    expect(two.lastCheckpoint()!.turns).to.have.length(2);

    await gw.stop("SIGTERM");
    const again = await rig.start();
    const reopened = new CursorClient(again.url);
    for (const data of client.blobs.values()) reopened.putBlob(data);

    // The user edits the first message: same id, new text, and the client's latest checkpoint.
    rig.fake.enqueue({ text: "answer one, edited" });
    const edited = turn(reopened, "m1", "question one, edited", two.lastCheckpoint());
    expect(await edited.done).to.deep.equal({ ok: true });
    const editRequest = rig.fake.requests[2]!.body as { messages: Array<{ role: string; content: string }> };
    expect(editRequest.messages.map((m) => m.role)).to.deep.equal(["system", "user"]);
    expect(editRequest.messages[1]!.content).to.include("question one, edited");
    expect(JSON.stringify(editRequest)).not.to.include("answer one").and.not.to.include("question two");
    const branch = edited.lastCheckpoint()!;
    expect(branch.turns, "the abandoned turns are not in the new checkpoint").to.have.length(1);
    expect(branch.rootPromptMessagesJson).to.have.length(3);
    await again.loggedLines((l) => l.includes("edited message branches from its anchor"));

    // The next message continues the new branch, prefix-stable.
    rig.fake.enqueue({ text: "answer three" });
    const three = turn(reopened, "m3", "question three", branch);
    expect(await three.done).to.deep.equal({ ok: true });
    const next = rig.fake.requests[3]!.body as { messages: unknown[] };
    expect(JSON.stringify(next.messages.slice(0, 2))).to.equal(JSON.stringify(editRequest.messages));
    expect(next.messages.map((m) => (m as { role: string }).role)).to.deep.equal([
      "system",
      "user",
      "assistant",
      "user",
    ]);
    expect(JSON.stringify(next)).not.to.include("question two");
    expect(rig.fake.pending()).to.equal(0);
  });

  it("a message sent again on the same checkpoint is not a branch", async () => {
    const gw = await rig.start();
    const client = new CursorClient(gw.url);
    const conversationId = `edit-repeat-${randomUUID()}`;
    rig.fake.enqueue({ text: "one" }, { text: "two" });
    const first = client.startRun({ conversationId, modelId: MODEL_ID, text: "q", customize: withMessageId("r1") });
    expect(await first.done).to.deep.equal({ ok: true });
    const second = client.startRun({
      conversationId,
      modelId: MODEL_ID,
      text: "q2",
      customize: withMessageId("r2"),
      checkpoint: first.lastCheckpoint(),
    });
    expect(await second.done).to.deep.equal({ ok: true });
    expect(second.lastCheckpoint()!.turns).to.have.length(2);
    expect(gw.stderrLines().some((l) => l.includes("edited message branches"))).to.equal(false);
  });
});
