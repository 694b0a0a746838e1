import { expect } from "chai";
import fc from "fast-check";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
  UserMessageSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { blobId } from "../../cursor/blob-graph.js";
import { CheckpointBuilder } from "../../cursor/checkpoint-builder.js";
import { decodeRootMessage, encodeRootMessage } from "../../cursor/root-messages.js";
import type { CanonicalMessage } from "../../providers/messages.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const system: CanonicalMessage = { role: "system", content: "You are a test." };
const user = create(UserMessageSchema, { text: "hi", messageId: "m1" });

describe("CheckpointBuilder (docs/protocol/cursor-run.md §4.1, §4.5, §5.2; docs/protocol/cursor-tools.md §4)", () => {
  it("leaves the client's state as it came: a snapshot replaces the fields it sets, it never mutates them", () => {
    const base = create(ConversationStateStructureSchema, {
      rootPromptMessagesJson: [blobId(encodeRootMessage(system))],
      readPaths: ["a.txt"],
      plans: { old: { id: "old", path: "file:///old.md" } },
      pendingToolCalls: ["earlier"],
    });
    const before = toBinary(ConversationStateStructureSchema, base);
    const b = new CheckpointBuilder(base, system, { kind: "new", userMessage: user }, "req-base");
    b.addRoot({ role: "user", content: "hi", origin: "runtime" });
    b.addReadPath("b.txt");
    const plans = [{ id: "p1", uri: "file:///p1.md", plan: "do it" }];
    const snap = b.snapshot({ pending: [], usedTokens: 1, maxTokens: 10, plans });
    expect(Object.keys(snap.state.plans)).to.deep.equal(["old", "p1"]);
    expect(snap.state.readPaths).to.deep.equal(["a.txt", "b.txt"]);
    expect(hex(toBinary(ConversationStateStructureSchema, base))).to.equal(hex(before));
  });

  it("encodes each snapshot's state exactly as toBinary does, through root additions and compactions", () => {
    const op = fc.oneof(
      fc.string({ maxLength: 8 }).map((content) => ({ kind: "root" as const, content })),
      fc.constant({ kind: "snapshot" as const }),
      fc.nat().map((at) => ({ kind: "compact" as const, at })),
    );
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 }),
        fc.array(op, { maxLength: 25 }),
        (old, ops) => {
          const base = create(ConversationStateStructureSchema, {
            rootPromptMessagesJson: [
              system,
              ...old.map((content) => ({ role: "user", content, origin: "runtime" }) as const),
            ].map((m) => blobId(encodeRootMessage(m))),
            readPaths: ["a.txt"],
          });
          const b = new CheckpointBuilder(base, system, { kind: "new", userMessage: user }, "req-enc");
          for (const o of [...ops, { kind: "snapshot" as const }]) {
            if (o.kind === "root") b.addRoot({ role: "user", content: o.content, origin: "runtime" });
            else if (o.kind === "compact")
              b.compact({ role: "user", content: "summary", origin: "runtime" }, "s", 1 + (o.at % b.rootIds().length));
            else {
              const { state, stateBlob } = b.snapshot({ pending: [], usedTokens: 1, maxTokens: 10 });
              expect(hex(stateBlob.data)).to.equal(hex(toBinary(ConversationStateStructureSchema, state)));
              expect(hex(stateBlob.id)).to.equal(hex(blobId(stateBlob.data)));
            }
          }
        },
      ),
    );
  });

  it("hands out each new blob once, children before parents, addressed by SHA-256", () => {
    const b = new CheckpointBuilder(
      create(ConversationStateStructureSchema),
      system,
      { kind: "new", userMessage: user },
      "req-1",
    );
    b.addRoot({ role: "user", content: "ctx + hi", origin: "runtime" });
    b.addAssistantStep("hello");
    const first = b.snapshot({ pending: ["x"], usedTokens: 10, maxTokens: 100 });
    for (const blob of first.sets) expect(hex(blob.id)).to.equal(hex(blobId(blob.data)));
    const turnId = first.state.turns[0]!;
    const turnIndex = first.sets.findIndex((s) => hex(s.id) === hex(turnId));
    const turn = fromBinary(ConversationTurnStructureSchema, first.sets[turnIndex]!.data);
    const children =
      turn.turn.case === "agentConversationTurn" ? [turn.turn.value.userMessage, ...turn.turn.value.steps] : [];
    for (const child of children)
      expect(first.sets.findIndex((s) => hex(s.id) === hex(child))).to.be.lessThan(turnIndex);
    expect(first.state.pendingToolCalls).to.deep.equal(["x"]);
    expect(first.state.tokenDetails?.usedTokens).to.equal(10);

    const second = b.snapshot({ pending: [], usedTokens: 12, maxTokens: 100 });
    expect(second.sets, "nothing new, nothing to SET").to.deep.equal([]);
    b.addRoot({ role: "assistant", text: "done", toolCalls: [] });
    const third = b.snapshot({ pending: [], usedTokens: 12, maxTokens: 100 });
    expect(third.sets.map((s) => hex(s.id))).to.include(hex(third.state.rootPromptMessagesJson[2]!));
    expect(third.state.rootPromptMessagesJson).to.have.length(3);
  });

  it("never re-sends blobs the client's checkpoint already references and keeps prior turns and unknown fields", () => {
    const oldRoots = [
      encodeRootMessage(system),
      encodeRootMessage({ role: "user", content: "old", origin: "runtime" }),
    ];
    const base = create(ConversationStateStructureSchema, {
      rootPromptMessagesJson: oldRoots.map(blobId),
      turns: [blobId(new Uint8Array([1]))],
    });
    const withUnknown = fromBinary(
      ConversationStateStructureSchema,
      new Uint8Array([
        ...toBinary(ConversationStateStructureSchema, base),
        ...new BinaryWriter().tag(4242, WireType.Varint).uint32(1).finish(),
      ]),
    );
    const b = new CheckpointBuilder(withUnknown, system, { kind: "new", userMessage: user }, "req-2");
    b.addRoot({ role: "user", content: "new", origin: "runtime" });
    const snap = b.snapshot({ pending: [], usedTokens: 0, maxTokens: 0 });
    const sent = new Set(snap.sets.map((s) => hex(s.id)));
    for (const old of base.rootPromptMessagesJson) expect(sent.has(hex(old)), "old root re-sent").to.equal(false);
    expect(snap.state.rootPromptMessagesJson.map(hex).slice(0, 2)).to.deep.equal(base.rootPromptMessagesJson.map(hex));
    expect(snap.state.turns).to.have.length(2);
    expect(hex(snap.state.turns[0]!)).to.equal(hex(base.turns[0]!));
    const reencoded = toBinary(ConversationStateStructureSchema, snap.state);
    expect(hex(reencoded)).to.include(hex(new BinaryWriter().tag(4242, WireType.Varint).uint32(1).finish()));
  });

  it("replaces a changed system prompt root with the new prompt's content address (docs/protocol/cursor-run.md §8.1–§8.2)", () => {
    const oldSystem = encodeRootMessage({ role: "system", content: "old prompt" });
    const base = create(ConversationStateStructureSchema, { rootPromptMessagesJson: [blobId(oldSystem)] });
    const snap = new CheckpointBuilder(base, system, { kind: "new", userMessage: user }, "r").snapshot({
      pending: [],
      usedTokens: 0,
      maxTokens: 0,
    });
    expect(hex(snap.state.rootPromptMessagesJson[0]!)).to.equal(hex(blobId(encodeRootMessage(system))));
  });
});

describe("root prompt message JSON (docs/protocol/cursor-run.md §4.2)", () => {
  it("round-trips every canonical message kind in the AI SDK shape", () => {
    const messages: CanonicalMessage[] = [
      system,
      { role: "user", content: "q", origin: "runtime", eventId: "run-request:r" },
      {
        role: "assistant",
        text: "t",
        thinking: "th",
        replay: { provider: "openai-chat", reasoningContent: "th" },
        toolRoundId: "r:round-0",
        toolCalls: [
          { id: "c2", name: "Grep", argumentsJson: '{"pattern":"x"}', index: 1 },
          { id: "c1", name: "Read", argumentsJson: '{"path":"a"}', index: 0 },
        ],
      },
      { role: "tool", toolCallId: "c1", toolName: "Read", content: "body", isError: false, toolRoundId: "r:round-0" },
      { role: "tool", toolCallId: "c2", toolName: "Grep", content: "oops", isError: true, toolRoundId: "r:round-0" },
    ];
    for (const m of messages) expect(decodeRootMessage(encodeRootMessage(m))).to.deep.equal(m);
    const json = JSON.parse(new TextDecoder().decode(encodeRootMessage(messages[2]!)));
    expect(json.content.map((p: { type: string }) => p.type)).to.deep.equal([
      "reasoning",
      "text",
      "tool-call",
      "tool-call",
    ]);
  });

  it("rejects bytes that are not a model message", () => {
    expect(() => decodeRootMessage(new TextEncoder().encode('{"role":"robot"}'))).to.throw(/unexpected shape/);
    expect(() => decodeRootMessage(new Uint8Array([0xff, 0xfe]))).to.throw(/not UTF-8 JSON/);
  });
});
