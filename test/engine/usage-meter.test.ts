// The usage ledger (docs/status-api.md §4): every usage report of a metered adapter is added up per front door,
// model and day, and the totals ride on a run's terminal commit; a failed write keeps them for the next one.
import { expect } from "chai";
import { UsageLedger, meteredAdapters, usageSink } from "../../engine/usage-meter.js";
import type { Logger } from "../../log/logger.js";
import type { ModelEvent, ProviderAdapter } from "../../providers/types.js";
import type { CheckpointCommit, UsageTotals } from "../../store/index.js";

const log: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const endpoint = { kind: "openai-chat" as const, baseUrl: "http://x", apiKey: "k" };
const request = { model: "gpt-x", system: "", tools: [], messages: [] };

function scripted(events: ModelEvent[]): ProviderAdapter {
  return {
    stream: async (_request, _signal, sink) => {
      for (const event of events) sink(event);
    },
  };
}

async function drain(adapter: ProviderAdapter): Promise<ModelEvent[]> {
  const seen: ModelEvent[] = [];
  await adapter.stream(request, new AbortController().signal, (e) => seen.push(e));
  return seen;
}

describe("engine: usage ledger", () => {
  const ledgers: UsageLedger[] = [];
  afterEach(async () => {
    for (const l of ledgers.splice(0)) await l.close();
  });

  function ledger(addUsage: (rows: readonly UsageTotals[]) => Promise<void>): UsageLedger {
    const l = new UsageLedger({ addUsage }, log, () => true);
    ledgers.push(l);
    return l;
  }

  it("meters each usage report as it passes, leaving the stream unchanged", async () => {
    const written: UsageTotals[][] = [];
    const l = ledger(async (rows) => void written.push([...rows]));
    const events: ModelEvent[] = [
      { type: "text_delta", delta: "hi" },
      { type: "usage", usage: { inputTokens: 100, outputTokens: 5, cacheReadTokens: 80 } },
    ];
    const metered = meteredAdapters(() => scripted(events), usageSink(l, "cursor"))(endpoint);
    expect(await drain(metered)).to.deep.equal(events);
    expect(await drain(metered)).to.deep.equal(events);
    await l.flush();
    expect(written).to.have.length(1);
    expect(written[0]).to.have.length(1);
    expect(written[0]![0]).to.include({ frontDoor: "cursor", model: "gpt-x", calls: 2, input: 200, output: 10 });
    expect(written[0]![0]).to.include({ cacheRead: 160, cacheWrite: 0 });
    await l.flush();
    expect(written, "nothing pending, nothing written").to.have.length(1);
  });

  it("hands the pending totals to the next checkpoint commit, and keeps them when it fails", async () => {
    const l = ledger(async () => {});
    const seen: Array<{ id: string; usage: readonly UsageTotals[] | undefined }> = [];
    let fail = true;
    const store = l.ridingOnCheckpoints({
      commitCheckpoint: async (c: CheckpointCommit) => {
        seen.push({ id: c.conversationId, usage: c.usage });
        if (fail) throw new Error("SQLITE_BUSY");
        return { revision: 1 };
      },
    });
    const commit = (id: string) => ({ conversationId: id, checkpointId: new Uint8Array(32), blobs: [], edges: [] });
    const call = {
      frontDoor: "messages",
      model: "m",
      day: "2026-12-03",
      input: 7,
      output: 1,
      cacheRead: 0,
      cacheWrite: 3,
    };
    l.recordUsage(call);
    await store.commitCheckpoint(commit("c1")).catch(() => undefined);
    fail = false;
    await store.commitCheckpoint(commit("c2"));
    await store.commitCheckpoint(commit("c3"));
    expect(seen.map((c) => [c.id, c.usage?.map((u) => u.calls)])).to.deep.equal([
      ["c1", [1]],
      ["c2", [1]],
      ["c3", []],
    ]);
    expect(seen[1]!.usage![0]).to.include({ frontDoor: "messages", input: 7, cacheWrite: 3 });
  });
});
