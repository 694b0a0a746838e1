// Nothing lost across a reconnect (docs/protocol/aep.md §9.3), on the scripted worker: a client that re-attaches
// with init data.last_seq gets every kept event after it, in order and with its original seq, before live events;
// deltas nobody received are not replayed (done.dropped says so, `message` has the whole text); the log survives a
// gateway restart and is bounded.
import { expect } from "chai";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import type { AepClient } from "./aep-client.js";
import { runPlainTurn, useScriptedRig } from "./scripted-rig.js";

describe("AEP event log and replay (scripted worker)", () => {
  const rig = useScriptedRig();

  async function runtimeSettled(client: AepClient, clientMessageId: string) {
    const store = rig.temp.store.aep;
    const sessionId = client.sessionId;
    for (let i = 0; i < 200; i++) {
      const row = await store.getInput(sessionId, clientMessageId);
      if (row?.runtimeStatus === "completed" || row?.runtimeStatus === "failed") return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`the turn of ${clientMessageId} did not end`);
  }

  const seqs = (es: ServerEnvelope[]) => es.map((e) => e.seq);

  it("a client gone during a turn re-attaches after it ended with last_seq and gets the missed events, original seqs", async () => {
    const { client } = await rig.open({ session_key: "r1" });
    await runPlainTurn(client, "m1", "go");
    const worker = rig.factory.last;
    worker.emit({ type: "text.delta", blockId: "b", text: "seen " });
    await client.next("message.delta");
    const lastSeen = client.received.at(-1)!.seq;
    await client.drop();
    worker.emit(
      { type: "text.delta", blockId: "b", text: "missed" },
      { type: "text.completed", blockId: "b", text: "seen missed" },
      { type: "turn.finished", outcome: "completed" },
    );
    await runtimeSettled(client, "m1");

    const again = await rig.open({ session_key: "r1", last_seq: lastSeen });
    await again.client.next((e) => e.event.type === "state" && e.seq > lastSeen + 5);
    const replayed = again.client.received;
    expect(again.client.kinds()).to.deep.equal([
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
      "state(idle)",
    ]);
    // A delta may have gone to the dead socket with its seq; deltas are not logged, so only such gaps appear.
    const got = seqs(replayed);
    expect(got[0]).to.be.within(lastSeen + 1, lastSeen + 2);
    expect(got, "in seq order").to.deep.equal([...got].sort((a, b) => a - b));
    expect(
      got.slice(1).every((seq, i) => seq === got[i]! + 1),
      "nothing kept is missing",
    ).to.equal(true);
    expect(again.client.of("message")[0]).to.deep.include({ content: "seen missed" });
    expect(again.client.of("done")[0]).to.deep.include({ success: true, dropped: true });
    await again.client.close();
  });

  it("re-attaching mid-message with last_seq replays that message's start when the client had not seen it", async () => {
    const { client } = await rig.open({ session_key: "r2" });
    await runPlainTurn(client, "m1", "go");
    const lastSeen = client.received.at(-1)!.seq; // input.ack(delivered): before any content
    await client.drop();
    const worker = rig.factory.last;
    worker.beginTurn();
    worker.emit({ type: "text.delta", blockId: "b", text: "while away" });
    await new Promise((resolve) => setTimeout(resolve, 50));

    const again = await rig.open({ session_key: "r2", last_seq: lastSeen });
    await again.client.next((e) => e.event.type === "state" && (e.event.data as { state: string }).state === "running");
    const kinds = again.client.kinds();
    expect(kinds.indexOf("message.start"), "the message opens before the state answer").to.be.greaterThan(-1);
    expect(kinds.indexOf("message.start")).to.be.lessThan(kinds.lastIndexOf("state(running)"));
    worker.emit(
      { type: "text.delta", blockId: "b", text: " and back" },
      { type: "text.completed", blockId: "b", text: "while away and back" },
      { type: "turn.finished", outcome: "completed" },
    );
    await again.client.next("runtime.execution.completed");
    const live = again.client.kinds().slice(kinds.length);
    expect(live).to.deep.equal([
      "message.delta",
      "message.end",
      "message",
      "done",
      "state(idle)",
      "runtime.execution.completed",
    ]);
    const all = seqs(again.client.received);
    expect(all, "seq rises on the wire, replay then live").to.deep.equal([...all].sort((a, b) => a - b));
    await again.client.close();
  });

  it("the log survives a gateway restart; a re-attach after it is replayed from the store", async () => {
    const { client } = await rig.open({ session_key: "r3" });
    const from = await runPlainTurn(client, "m1", "go");
    rig.factory.last.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("runtime.execution.completed", from);
    const before = client.received.filter((e) => e.seq > 1).map((e) => `${e.seq} ${e.event.type}`);
    const last = client.received.at(-1)!.seq;
    await client.close();
    await rig.listener.close();
    rig.listener = await rig.listen();
    const again = await rig.open({ session_key: "r3", last_seq: 1 });
    await again.client.next((e) => e.event.type === "state" && e.seq > last);
    expect(again.client.received.filter((e) => e.seq <= last).map((e) => `${e.seq} ${e.event.type}`)).to.deep.equal(
      before,
    );
    await again.client.close();
  });
});
