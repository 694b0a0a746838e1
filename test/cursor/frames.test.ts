import { expect } from "chai";
import { create, toBinary } from "@bufbuild/protobuf";
import { AgentServerMessageSchema, ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { blobId } from "../../cursor/blob-graph.js";
import { encodeFrame, frames } from "../../cursor/frames.js";

describe("cursor/frames: a checkpoint frame built from its state's own bytes", () => {
  it("is byte for byte the frame encoding the state again would give", () => {
    const state = create(ConversationStateStructureSchema, {
      rootPromptMessagesJson: Array.from({ length: 300 }, (_, i) => blobId(new Uint8Array([i & 255, i >> 8]))),
      pendingToolCalls: ["batch"],
      readPaths: ["a.txt"],
    });
    const encoded = toBinary(ConversationStateStructureSchema, state);
    const fresh = toBinary(AgentServerMessageSchema, frames.checkpoint(state));
    expect(Buffer.from(encodeFrame(frames.checkpoint(state, encoded))).equals(Buffer.from(fresh))).to.equal(true);
    // Without the state's bytes the frame is encoded when it is sent.
    expect(Buffer.from(encodeFrame(frames.checkpoint(state))).equals(Buffer.from(fresh))).to.equal(true);
  });
});
