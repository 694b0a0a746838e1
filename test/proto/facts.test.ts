// The committed .proto files are exactly what scripts/facts-to-proto.ts writes from proto/facts/, so the wire
// facts stay the one source of field numbers and a hand edit of a .proto file is caught.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { DEFAULT_FACTS, readFacts, renderProtoFiles } from "../../scripts/facts-to-proto.js";

describe("proto/ from the wire facts", () => {
  it("each committed .proto file equals what the generator writes from proto/facts", () => {
    const files = renderProtoFiles(readFacts(DEFAULT_FACTS));
    expect([...files.keys()].sort()).to.deep.equal(["agent/v1/agent.proto", "aiserver/v1/aiserver.proto"]);
    for (const [rel, text] of files) {
      const committed = readFileSync(new URL(`../../proto/${rel}`, import.meta.url), "utf8");
      expect(committed === text, `proto/${rel} differs from the generator's output`).to.equal(true);
    }
  });
});
