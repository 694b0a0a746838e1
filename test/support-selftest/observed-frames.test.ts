import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createHash } from "node:crypto";
import {
  AgentServerMessageSchema,
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
  type InteractionUpdateSchema,
  UserMessageSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import {
  assertEndStreamInvariants,
  blobClosure,
  frameKinds,
  type ObservedFrame,
  type RunEnd,
} from "../support/observed-frames.js";

type Init = MessageInitShape<typeof AgentServerMessageSchema>["message"];
const update = (message: MessageInitShape<typeof InteractionUpdateSchema>["message"]): Init => ({
  case: "interactionUpdate",
  value: { message },
});
const msg = (message: Init, connection = 1): ObservedFrame => ({
  kind: "message",
  message: create(AgentServerMessageSchema, { message }),
  connection,
  compressed: false,
  at: 0,
});
const end = (e: RunEnd, connection = 1): ObservedFrame => ({ kind: "end", end: e, connection, at: 0 });

const text = (t: string) => msg(update({ case: "textDelta", value: { text: t } }));
const heartbeat = msg(update({ case: "heartbeat", value: {} }));
const turnEnded = msg(update({ case: "turnEnded", value: {} }));
const checkpoint = (pending: string[]) =>
  msg({ case: "conversationCheckpointUpdate", value: { pendingToolCalls: pending } });
const staged = checkpoint(["call-1"]);
const settled = checkpoint([]);

describe("observed RunSSE frames", () => {
  it("renders a compact kind list, leaving out heartbeats and collapsing chosen repeats", () => {
    const frames = [
      text("a"),
      heartbeat,
      text("b"),
      msg({ case: "execServerMessage", value: { id: 1, message: { case: "readArgs", value: { path: "x" } } } }),
      msg({ case: "kvServerMessage", value: { id: 0, message: { case: "setBlobArgs", value: {} } } }),
      msg({ case: "execServerControlMessage", value: { message: { case: "abort", value: { id: 1 } } } }),
      end({ ok: false, code: "canceled", message: "canceled" }),
    ];
    expect(frameKinds(frames)).to.deep.equal([
      "text_delta",
      "text_delta",
      "exec:read_args",
      "kv_set",
      "abort",
      "end:canceled",
    ]);
    expect(frameKinds(frames, { heartbeats: true, collapse: ["text_delta"] })).to.deep.equal([
      "text_delta",
      "heartbeat",
      "text_delta",
      "exec:read_args",
      "kv_set",
      "abort",
      "end:canceled",
    ]);
  });

  it("accepts the success tail turn_ended → staged → settled → same settled → end:ok", () => {
    assertEndStreamInvariants([text("hi"), turnEnded, heartbeat, staged, settled, settled, end({ ok: true })]);
  });

  it("rejects success tails that break the order", () => {
    const ok = end({ ok: true });
    expect(() => assertEndStreamInvariants([text("hi"), staged, settled, settled, ok])).to.throw(
      /exactly one turn_ended/,
    );
    expect(() => assertEndStreamInvariants([turnEnded, staged, settled, ok])).to.throw(/staged checkpoint/);
    expect(() => assertEndStreamInvariants([turnEnded, staged, text("x"), settled, settled, ok])).to.throw(
      /staged checkpoint/,
    );
    expect(() => assertEndStreamInvariants([turnEnded, settled, settled, staged, ok])).to.throw(
      /repeated final checkpoint/,
    );
    expect(() => assertEndStreamInvariants([turnEnded, staged, settled, settled, ok, text("late")])).to.throw(
      /last frame/,
    );
  });

  it("rejects turn_ended or the error text in a text_delta on failed runs", () => {
    const failed = end({ ok: false, code: "unavailable", message: "provider exploded" });
    assertEndStreamInvariants([text("partial"), failed]);
    expect(() => assertEndStreamInvariants([turnEnded, failed])).to.throw(/must not send turn_ended/);
    expect(() => assertEndStreamInvariants([text("Error: provider exploded"), failed])).to.throw(/leaked/);
  });

  it("checks each connection that was not dropped on purpose", () => {
    const dropped: ObservedFrame = { kind: "disconnect", connection: 1, at: 0 };
    assertEndStreamInvariants([
      text("a"),
      dropped,
      msg(update({ case: "turnEnded", value: {} }), 2),
      msg({ case: "conversationCheckpointUpdate", value: {} }, 2),
      msg({ case: "conversationCheckpointUpdate", value: {} }, 2),
      msg({ case: "conversationCheckpointUpdate", value: {} }, 2),
      end({ ok: true }, 2),
    ]);
    expect(() => assertEndStreamInvariants([text("a"), dropped])).to.throw(/no RunSSE connection ran to its end/);
  });

  it("walks a checkpoint's blob closure through turns and user messages, and names blobs it could not read", () => {
    const blobs = new Map<string, Uint8Array>();
    const put = (bytes: Uint8Array): Uint8Array => {
      const id = new Uint8Array(createHash("sha256").update(bytes).digest());
      blobs.set(Buffer.from(id).toString("hex"), bytes);
      return id;
    };
    const hex = (id: Uint8Array) => Buffer.from(id).toString("hex");
    const root = put(new TextEncoder().encode('{"role":"system"}'));
    const innerRoot = put(new TextEncoder().encode('{"role":"user"}'));
    const state = put(
      toBinary(
        ConversationStateStructureSchema,
        create(ConversationStateStructureSchema, { rootPromptMessagesJson: [innerRoot] }),
      ),
    );
    const user = put(
      toBinary(UserMessageSchema, create(UserMessageSchema, { text: "hi", conversationStateBlobId: state })),
    );
    const absentStep = new Uint8Array(32).fill(7);
    const turn = put(
      toBinary(
        ConversationTurnStructureSchema,
        create(ConversationTurnStructureSchema, {
          turn: { case: "agentConversationTurn", value: { userMessage: user, steps: [absentStep] } },
        }),
      ),
    );
    const closure = blobClosure(
      create(ConversationStateStructureSchema, { rootPromptMessagesJson: [root], turns: [turn] }),
      blobs,
    );
    expect(closure.referenced).to.deep.equal([root, turn, user, state, innerRoot, absentStep].map(hex));
    expect(closure.missing).to.deep.equal([hex(absentStep)]);
  });
});
