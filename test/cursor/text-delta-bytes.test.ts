import { expect } from "chai";
import fc from "fast-check";
import { toBinary } from "@bufbuild/protobuf";
import { AgentServerMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { encodeFrame, frames } from "../../cursor/frames.js";
import { encodeTextDelta } from "../../cursor/text-delta-bytes.js";

const generic = (text: string) => Buffer.from(toBinary(AgentServerMessageSchema, frames.textDelta(text)));

describe("cursor/text-delta-bytes: a text_delta frame written directly", () => {
  it("is byte for byte what the generic encoder gives, for any text (lone surrogates and astral planes included)", () => {
    const codeUnit = fc.nat(0xffff).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: codeUnit })), (text) => {
        expect(Buffer.from(encodeTextDelta(text)).equals(generic(text))).to.equal(true);
        expect(Buffer.from(encodeFrame(frames.textDelta(text))).equals(generic(text))).to.equal(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it("sizes every length prefix right, up to lengths of four varint bytes", () => {
    for (const length of [0, 127, 128, 16_380, 16_384, 2_097_150, 2_097_152]) {
      const text = "é".repeat(Math.floor(length / 2)) + "a".repeat(length % 2);
      expect(Buffer.from(encodeTextDelta(text)).equals(generic(text)), `${length} bytes`).to.equal(true);
    }
  });
});
