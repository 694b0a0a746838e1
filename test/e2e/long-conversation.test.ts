// A conversation of many turns: each turn's work is proportional to what is new in it (docs/protocol/cursor-run.md §6,
// §8.1): the same handful of blobs is SET per turn however long the history, and every provider request extends the
// last.
import { expect } from "chai";
import type { ConversationStateStructure } from "../../proto/gen/agent/v1/agent_pb.js";
import { CursorClient } from "../support/cursor-client.js";
import { assertEndStreamInvariants } from "../support/observed-frames.js";
import { MODEL, useToolsRig } from "./tools-kit.js";

const TURNS = 12;

describe("e2e: a long conversation", function () {
  this.timeout(30_000);
  const rig = useToolsRig("long");

  it(`keeps per-turn blob SETs constant and every request a strict extension of the previous one over ${TURNS} turns`, async () => {
    const fake = await rig.fake();
    const client = new CursorClient(rig.gw.url);
    const conversationId = `long-${process.pid}`;
    let checkpoint: ConversationStateStructure | undefined;
    const setsPerTurn: number[] = [];
    for (let turn = 0; turn < TURNS; turn++) {
      fake.enqueue({ text: `answer ${turn} `.repeat(20), usage: { prompt_tokens: 100 + turn, completion_tokens: 10 } });
      const run = client.startRun({
        conversationId,
        modelId: MODEL,
        text: `question ${turn}`,
        credentials: { apiKey: "sk-long", baseUrl: fake.baseUrl },
        ...(checkpoint ? { checkpoint } : {}),
      });
      expect(await run.done).to.deep.equal({ ok: true });
      assertEndStreamInvariants(run.frames);
      setsPerTurn.push(run.kinds().filter((k) => k === "kv_set").length);
      checkpoint = run.lastCheckpoint()!;
      expect(checkpoint.rootPromptMessagesJson).to.have.length(1 + 2 * (turn + 1));
      expect(checkpoint.turns).to.have.length(turn + 1);
    }
    expect(client.violations()).to.deep.equal([]);
    // The first turn also SETs the system prompt; after it, every turn SETs the same five new blobs.
    expect(setsPerTurn.slice(1)).to.deep.equal(Array(TURNS - 1).fill(setsPerTurn[0]! - 1));
    const bodies = fake.requests.map((r) => r.body.messages as unknown[]);
    for (let i = 1; i < bodies.length; i++) {
      expect(bodies[i]!.slice(0, bodies[i - 1]!.length), `request ${i} does not extend request ${i - 1}`).to.deep.equal(
        bodies[i - 1],
      );
      expect(bodies[i]!.length).to.equal(bodies[i - 1]!.length + 2);
    }
  });
});
