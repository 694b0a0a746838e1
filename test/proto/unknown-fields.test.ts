import { expect } from "chai";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { AgentClientMessageSchema, ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";

describe("generated protobuf code (proto/)", () => {
  it("keeps fields it does not model through decode → encode, byte for byte", () => {
    const known = toBinary(
      ConversationStateStructureSchema,
      create(ConversationStateStructureSchema, { readPaths: ["/a"] }),
    );
    const extra = new BinaryWriter()
      .tag(999, WireType.LengthDelimited)
      .string("from a newer client")
      .tag(1000, WireType.Varint)
      .uint32(7)
      .finish();
    const wire = new Uint8Array([...known, ...extra]);
    const decoded = fromBinary(ConversationStateStructureSchema, wire);
    expect(decoded.readPaths).to.deep.equal(["/a"]);
    expect(toBinary(ConversationStateStructureSchema, decoded)).to.deep.equal(wire);
  });

  it("uses the client's field numbers (spot checks against the wire facts)", () => {
    const msg = create(AgentClientMessageSchema, {
      message: { case: "kvClientMessage", value: { id: 3, message: { case: "setBlobResult", value: {} } } },
    });
    // AgentClientMessage.kv_client_message = 3 (tag 0x1a), KvClientMessage.id = 1, set_blob_result = 3.
    expect(Buffer.from(toBinary(AgentClientMessageSchema, msg)).toString("hex")).to.equal("1a0408031a00");
    const append = create(BidiAppendRequestSchema, { data: "ab", requestId: { requestId: "r" }, appendSeqno: 5n });
    // data = 1 (0x0a), request_id = 2 (0x12), append_seqno = 3 (0x18).
    expect(Buffer.from(toBinary(BidiAppendRequestSchema, append)).toString("hex")).to.equal("0a02616212030a01721805");
  });

  it("keeps proto3 optional presence: a set zero is written and read back as set", () => {
    const state = create(ConversationStateStructureSchema, { mode: 0 });
    const back = fromBinary(ConversationStateStructureSchema, toBinary(ConversationStateStructureSchema, state));
    expect(back.mode).to.equal(0);
    expect(fromBinary(ConversationStateStructureSchema, new Uint8Array()).mode).to.equal(undefined);
  });
});
