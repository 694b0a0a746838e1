// The RunSSE / Run frame writer: the frames of one synchronous run leave in one corked write, and that write goes
// out at the end of the current microtask, not after the whole microtask cascade of a provider read (issue 17: the
// first token waited for the run's end and final checkpoint, which the same cascade computes).
import type { ServerResponse } from "node:http";
import { toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { frames } from "../../cursor/frames.js";
import { AgentServerMessageSchema, ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { EnvelopeFlags } from "../../transport/connect/envelope.js";
import { streamWriter } from "../../transport/stream-writer.js";
import { create } from "@bufbuild/protobuf";

/** A response that records writes and when the corked frames were released. */
function recordingResponse(log: string[]) {
  let corks = 0;
  const res = {
    writableEnded: false,
    cork: () => void corks++,
    uncork: () => {
      corks--;
      log.push("uncork");
    },
    write: (chunk: Uint8Array) => {
      log.push(corks > 0 ? `corked write ${chunk.length}` : `write ${chunk.length}`);
      return true;
    },
  };
  return res as unknown as ServerResponse;
}

async function microtaskCascade(steps: number, log: string[]): Promise<void> {
  for (let i = 0; i < steps; i++) await Promise.resolve();
  log.push("cascade done");
}

describe("stream writer", () => {
  it("releases the frames written in one synchronous run together, before the microtask cascade ends", async () => {
    const log: string[] = [];
    const write = streamWriter(recordingResponse(log), false);
    const cascade = microtaskCascade(50, log);
    write(new Uint8Array(3));
    write(new Uint8Array(4));
    await cascade;
    expect(log).to.deep.equal(["corked write 8", "corked write 9", "uncork", "cascade done"]);
  });

  it("corks again for frames written after the release", async () => {
    const log: string[] = [];
    const write = streamWriter(recordingResponse(log), false);
    write(new Uint8Array(1));
    await Promise.resolve();
    write(new Uint8Array(2));
    await Promise.resolve();
    expect(log).to.deep.equal(["corked write 6", "uncork", "corked write 7", "uncork"]);
  });

  it("gzips frames of 1 KiB or more for a client that accepts it, but never a checkpoint update", () => {
    const written: Uint8Array[] = [];
    const res = { writableEnded: false, cork() {}, uncork() {}, write: (c: Uint8Array) => written.push(c) };
    const write = streamWriter(res as unknown as ServerResponse, true);
    const roots = Array.from({ length: 64 }, (_, i) => new Uint8Array(32).fill(i));
    const checkpoint = toBinary(
      AgentServerMessageSchema,
      frames.checkpoint(create(ConversationStateStructureSchema, { rootPromptMessagesJson: roots })),
    );
    const text = toBinary(AgentServerMessageSchema, frames.textDelta("x".repeat(2048)));
    write(new Uint8Array(10));
    write(text);
    write(checkpoint);
    expect(checkpoint.length).to.be.at.least(1024);
    expect(written.map((frame) => frame[0])).to.deep.equal([0, EnvelopeFlags.compressed, 0]);
  });
});
