// Durable commits per tool round (issue 17: ≤ 2 per single-call round). With synchronous = FULL in WAL mode each
// commit is one fsync. A round commits twice (docs/protocol/cursor-run.md §5.2, §6.2): the assistant batch with the
// staged checkpoint (published before any tool runs), and the round's last tool results with the settled checkpoint
// and the next provider_call_index (the results durable before their tool_call_completed,
// docs/protocol/cursor-tools.md §2.5, §4.2; the settled SETs after those frames, §4.4). Counted through the
// diagnostics' onQuery hook on the real gateway; a change that adds a commit to the round fails here.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../store/index.js";
import { createWorkspace } from "../support/client-workspace.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, type ScriptedTurn, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertCleanSuccess } from "./tools-kit.js";

const COMMITS_PER_TOOL_ROUND = 2;
/**
 * A turn of one tool round: the run's start (route, input anchor and run row together, issue 17), the runtime
 * message with the first provider_call_index, the round's two, the final checkpoint with the answer, the terminal
 * status.
 */
const COMMITS_PER_ONE_ROUND_TURN = 6;

describe("e2e: store commits per tool round", function () {
  this.timeout(30_000);
  let dir: string;
  let gw: GatewayProcess;
  let fake: FakeOpenAI;
  let seq = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "byok-e2e-commits-"));
    gw = await startGatewayProcess({ dataDir: dir, config: { models: [] }, env: { BYOK_DIAGNOSTICS: "1" } });
    fake = await startFakeOpenAI();
  });
  after(async () => {
    await fake.close();
    await gw.stop();
    killAllGateways();
    await rm(dir, { recursive: true, force: true });
  });

  const storeCommits = async () =>
    ((await (await fetch(`${gw.url}/__byok/diagnostics`)).json()) as { storeCommits: number }).storeCommits;
  const read = (i: number): ScriptedTurn => ({
    toolCalls: [{ id: `call_${seq}_${i}`, name: "Read", args: { path: "a.txt" } }],
  });

  /** The store's commits during one turn of `rounds` Read rounds and a final answer. */
  async function commitsOfTurn(rounds: number): Promise<{ commits: number; requestId: string }> {
    fake.enqueue(...Array.from({ length: rounds }, (_, i) => read(i)), { text: "done" });
    const before = await storeCommits();
    const client = new CursorClient(gw.url, { workspace: createWorkspace({ "a.txt": "A\n" }) });
    const run = client.startRun({
      conversationId: `commits-${++seq}`,
      modelId: "gpt-e2e-commits",
      text: "read a.txt",
      credentials: { apiKey: "sk-e2e", baseUrl: fake.baseUrl },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    assertCleanSuccess(run, client);
    return { commits: (await storeCommits()) - before, requestId: run.requestId };
  }

  it(`commits at most ${COMMITS_PER_TOOL_ROUND} times per tool round and ${COMMITS_PER_ONE_ROUND_TURN} times per one-round turn`, async () => {
    await commitsOfTurn(1); // a fresh store's first run
    const one = await commitsOfTurn(1);
    const three = await commitsOfTurn(3);
    expect((three.commits - one.commits) / 2).to.be.at.most(COMMITS_PER_TOOL_ROUND);
    expect(one.commits, "commits of a one-round turn").to.be.at.most(COMMITS_PER_ONE_ROUND_TURN);
    // The settled checkpoints carried the call indexes: the run's row names its last call (0-based,
    // docs/protocol/cursor-run.md §6.5).
    const store = await openStore({ dataDir: dir });
    try {
      expect((await store.getRun(three.requestId))!.providerCallIndex).to.equal(3);
    } finally {
      await store.close();
    }
  });
});
