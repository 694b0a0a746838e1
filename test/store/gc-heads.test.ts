import { create, fromBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { CheckpointBuilder, type CheckpointSnapshot } from "../../cursor/checkpoint-builder.js";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
  UserMessageSchema,
  type ConversationStateStructure,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { DerivedState } from "../../cursor/derived-state.js";
import { tempStore, type TempStore } from "./temp-store.js";

const HOUR = 3_600_000;
const hex = (id: Uint8Array) => Buffer.from(id).toString("hex");

/** One turn the way a run writes it: built on the state the client sent back, committed snapshot by snapshot. */
async function turn(
  t: TempStore,
  base: ConversationStateStructure,
  n: number,
  derived?: DerivedState,
): Promise<CheckpointSnapshot> {
  const userMessage = create(UserMessageSchema, { text: `question ${n}`, messageId: `m${n}` });
  const b = new CheckpointBuilder(base, { role: "system", content: "prompt" }, { kind: "new", userMessage }, `r${n}`);
  b.addRoot({ role: "user", content: `runtime ${n}`, origin: "runtime", eventId: `run-request:r${n}` });
  b.addAssistantStep(`answer ${n}`);
  b.addRoot({ role: "assistant", text: `answer ${n}`, toolCalls: [] });
  const s = b.snapshot({ pending: [], usedTokens: 0, maxTokens: 0, ...(derived ? { derived } : {}) });
  await t.store.commitCheckpoint({
    conversationId: "c",
    checkpointId: s.stateBlob.id,
    blobs: [...s.sets, s.stateBlob],
    edges: s.edges,
  });
  return s;
}

describe("store: garbage collection keeps everything a head reaches (docs/protocol/cursor-run.md §6.6)", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  it("keeps the to-do items the head lists, and only those (docs/protocol/cursor-run.md §8.9)", async () => {
    const todo = (id: string, status: "pending" | "completed") => ({ id, content: `do ${id}`, status });
    const first = await turn(t, create(ConversationStateStructureSchema), 1, { todos: [todo("a", "pending")] });
    const second = await turn(t, first.state, 2, { todos: [todo("a", "completed"), todo("b", "pending")] });
    expect(second.state.todos).to.have.length(2);
    const db = await t.inspect();
    await db("blobs").update({ created_at: Date.now() - 10 * HOUR });

    await t.store.collectBlobs(Date.now() - HOUR);

    expect((await t.store.missingBlobs(second.state.todos)).map(hex)).to.deep.equal([]);
    // The first checkpoint's item is no longer listed by the head: swept.
    expect((await t.store.missingBlobs(first.state.todos)).map(hex)).to.deep.equal(first.state.todos.map(hex));
  });

  it("a multi-turn conversation's head still resolves after its blobs age past the retention and a sweep", async () => {
    let state = create(ConversationStateStructureSchema);
    for (let n = 1; n <= 4; n++) state = (await turn(t, state, n)).state;
    const db = await t.inspect();
    await db("blobs").update({ created_at: Date.now() - 10 * HOUR });

    await t.store.collectBlobs(Date.now() - HOUR);

    // Nothing the head lists is missing, so the next run sends no get_blob_args.
    const listed = [...state.rootPromptMessagesJson, ...state.turns];
    expect(listed).to.have.length(4 * 2 + 1 + 4);
    expect((await t.store.missingBlobs(listed)).map(hex)).to.deep.equal([]);
    // And the blobs under each turn: its user message and steps.
    for (const id of state.turns) {
      const data = (await t.store.getBlob(id))!;
      const { turn: agentTurn } = fromBinary(ConversationTurnStructureSchema, data);
      if (agentTurn.case !== "agentConversationTurn") throw new Error("not an agent turn");
      const under = [agentTurn.value.userMessage, ...agentTurn.value.steps];
      expect((await t.store.missingBlobs(under)).map(hex)).to.deep.equal([]);
    }
  });

  it("what only an earlier head reached goes once it is old", async () => {
    const first = await turn(t, create(ConversationStateStructureSchema), 1);
    // The head moves to a branch that shares only the system prompt: the first turn's own blobs are unreachable.
    await turn(t, create(ConversationStateStructureSchema), 2);
    const db = await t.inspect();
    await db("blobs").update({ created_at: Date.now() - 10 * HOUR });
    const result = await t.store.collectBlobs(Date.now() - HOUR);
    expect(result.deletedBlobs).to.be.greaterThan(0);
    expect(await t.store.getBlob(first.state.turns[0]!)).to.equal(undefined);
    expect(await t.store.getBlob(first.stateBlob.id)).to.equal(undefined);
  });
});
