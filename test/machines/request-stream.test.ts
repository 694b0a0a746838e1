import { expect } from "chai";
import { create, toBinary } from "@bufbuild/protobuf";
import { createActor, SimulatedClock } from "xstate";
import {
  AgentClientMessageSchema,
  AgentServerMessageSchema,
  type AgentClientMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { admit, noRunRequestEnd, requestStreamMachine } from "../../machines/request-stream.js";
import { frames } from "../../cursor/frames.js";

/** The backlog holds encoded frames, as the engine sends them. */
const textDelta = (text: string) => toBinary(AgentServerMessageSchema, frames.textDelta(text));

const heartbeat = (n: number): AgentClientMessage =>
  create(AgentClientMessageSchema, {
    message: { case: "execClientControlMessage", value: { message: { case: "heartbeat", value: { id: n } } } },
  });
const runRequest = () =>
  create(AgentClientMessageSchema, { message: { case: "runRequest", value: { conversationId: "c" } } });
const idOf = (m: AgentClientMessage) =>
  m.message.case === "execClientControlMessage" && m.message.value.message.case === "heartbeat"
    ? m.message.value.message.value.id
    : -1;

describe("append_seqno admission (docs/protocol/cursor-transport.md §6)", () => {
  const start = { nextSeqno: 1n, held: new Map<bigint, AgentClientMessage>() };

  it("delivers the next seqno at once and advances", () => {
    const r = admit(start, 1n, heartbeat(1));
    expect(r.deliver.map(idOf)).to.deep.equal([1]);
    expect(r.nextSeqno).to.equal(2n);
  });

  it("holds a gap and releases the run when it is filled", () => {
    const a = admit(start, 3n, heartbeat(3));
    const b = admit(a, 2n, heartbeat(2));
    expect(a.deliver).to.deep.equal([]);
    expect(b.deliver).to.deep.equal([]);
    const c = admit(b, 1n, heartbeat(1));
    expect(c.deliver.map(idOf)).to.deep.equal([1, 2, 3]);
    expect(c.nextSeqno).to.equal(4n);
    expect(c.held.size).to.equal(0);
  });

  it("drops duplicates, whether already delivered or still held", () => {
    const a = admit(start, 1n, heartbeat(1));
    expect(admit(a, 1n, heartbeat(9)).deliver).to.deep.equal([]);
    const held = admit(a, 3n, heartbeat(3));
    const again = admit(held, 3n, heartbeat(33));
    expect(again.held.size).to.equal(1);
    expect(idOf(again.held.get(3n)!)).to.equal(3);
  });

  it("lets unsequenced messages (append_seqno <= 0) bypass ordering", () => {
    const r = admit(start, 0n, heartbeat(7));
    expect(r.deliver.map(idOf)).to.deep.equal([7]);
    expect(r.nextSeqno).to.equal(1n);
  });
});

describe("RequestStream machine", () => {
  function stream() {
    const clock = new SimulatedClock();
    const delivered: number[] = [];
    let abandoned = 0;
    const actor = createActor(
      requestStreamMachine.provide({
        actions: {
          deliver: (_, { message }) => delivered.push(idOf(message)),
          abandon: () => abandoned++,
        },
      }),
      { input: { requestId: "r1", now: () => clock.now() }, clock },
    );
    const seen: string[] = [];
    actor.start();
    const { outbound } = actor.getSnapshot().context;
    outbound.follow({
      frame: () => seen.push("frame"),
      heartbeat: () => seen.push("heartbeat"),
      end: () => seen.push("end"),
    });
    /** What the engine does with each encoded frame of the run. */
    const output = (text: string) => outbound.append(textDelta(text));
    return { actor, clock, delivered, seen, output, outbound, abandoned: () => abandoned };
  }

  it("delivers appends in seqno order whatever their arrival order", () => {
    const s = stream();
    s.actor.send({ type: "APPEND", seqno: 2n, message: heartbeat(2) });
    s.actor.send({ type: "APPEND", seqno: 1n, message: heartbeat(1) });
    s.actor.send({ type: "APPEND", seqno: 2n, message: heartbeat(22) });
    expect(s.delivered).to.deep.equal([1, 2]);
  });

  it("keeps every output frame in the backlog for replay, but never heartbeats", () => {
    const s = stream();
    s.actor.send({ type: "SUBSCRIBE" });
    s.output("a");
    s.clock.increment(5_000);
    s.output("b");
    expect(s.seen).to.deep.equal(["frame", "heartbeat", "frame"]);
    expect(s.outbound.size).to.equal(2);
  });

  it("sends a heartbeat only after 5 s without output", () => {
    const s = stream();
    s.actor.send({ type: "SUBSCRIBE" });
    s.clock.increment(4_000);
    s.output("a");
    s.clock.increment(4_000);
    expect(s.seen).to.deep.equal(["frame"]);
    s.clock.increment(1_000);
    expect(s.seen).to.deep.equal(["frame", "heartbeat"]);
    s.clock.increment(5_000);
    expect(s.seen).to.deep.equal(["frame", "heartbeat", "heartbeat"]);
  });

  it("abandons the run 30 s after the last subscriber left, not before, and not if it came back", () => {
    const s = stream();
    s.actor.send({ type: "APPEND", seqno: 1n, message: runRequest() });
    s.actor.send({ type: "SUBSCRIBE" });
    s.actor.send({ type: "UNSUBSCRIBE" });
    s.clock.increment(29_000);
    s.actor.send({ type: "SUBSCRIBE" });
    s.clock.increment(60_000);
    expect(s.abandoned()).to.equal(0);
    s.actor.send({ type: "UNSUBSCRIBE" });
    s.clock.increment(30_000);
    expect(s.abandoned()).to.equal(1);
  });

  it("ends a stream whose run_request never came after 30 s with deadline_exceeded, then forgets it", () => {
    const s = stream();
    s.actor.send({ type: "SUBSCRIBE" });
    s.clock.increment(29_999);
    expect(s.seen.filter((e) => e === "end")).to.have.length(0);
    s.clock.increment(1);
    expect(s.actor.getSnapshot().value).to.equal("terminal");
    expect(s.seen.at(-1)).to.equal("end");
    expect(s.actor.getSnapshot().context.end).to.equal(noRunRequestEnd);
    expect(noRunRequestEnd.ok || noRunRequestEnd.error.code).to.equal("deadline_exceeded");
    s.clock.increment(30_000);
    expect(s.actor.getSnapshot().status).to.equal("done");
  });

  it("keeps waiting no longer once the run_request came, in order or held, nor after a reuse", () => {
    const s = stream();
    s.actor.send({ type: "SUBSCRIBE" });
    s.actor.send({ type: "APPEND", seqno: 1n, message: runRequest() });
    s.clock.increment(120_000);
    expect(s.actor.getSnapshot().value).to.not.equal("terminal");
    expect(s.delivered).to.deep.equal([-1]);
    s.actor.send({ type: "END", end: { ok: true } });
    s.actor.send({ type: "APPEND", seqno: 1n, message: runRequest() });
    s.clock.increment(120_000);
    expect(s.actor.getSnapshot().context.end).to.equal(undefined);
    expect(s.delivered).to.deep.equal([-1, -1]);
  });

  it("re-arms for the rest of the interval when frames came since: the heartbeat is 5 s after the last one", () => {
    const s = stream();
    for (const at of [1_000, 2_000, 4_999]) {
      s.clock.set(at);
      s.output("a");
    }
    s.clock.set(9_998);
    expect(s.seen).to.deep.equal(["frame", "frame", "frame"]);
    s.clock.set(9_999);
    expect(s.seen).to.deep.equal(["frame", "frame", "frame", "heartbeat"]);
    s.clock.set(12_000);
    s.output("b");
    s.clock.set(16_999);
    expect(s.seen.filter((e) => e === "heartbeat")).to.have.length(1);
    s.clock.set(17_000);
    expect(s.seen.filter((e) => e === "heartbeat")).to.have.length(2);
  });

  it("keeps a terminal stream replayable for 30 s, then stops", () => {
    const s = stream();
    s.output("a");
    s.actor.send({ type: "END", end: { ok: true } });
    expect(s.actor.getSnapshot().value).to.equal("terminal");
    expect(s.actor.getSnapshot().context.end).to.deep.equal({ ok: true });
    s.clock.increment(29_999);
    expect(s.actor.getSnapshot().status).to.equal("active");
    s.clock.increment(1);
    expect(s.actor.getSnapshot().status).to.equal("done");
  });

  it("accepts no output after its end", () => {
    const s = stream();
    s.actor.send({ type: "END", end: { ok: true } });
    expect(s.output("late")).to.equal(false);
    expect(s.outbound.size).to.equal(0);
    expect(s.seen).to.deep.equal(["end"]);
  });

  it("reuses an ended request_id that starts again at seqno 1 with a run_request", () => {
    const s = stream();
    s.actor.send({ type: "APPEND", seqno: 1n, message: heartbeat(1) });
    s.output("a");
    s.actor.send({ type: "END", end: { ok: true } });
    s.actor.send({ type: "APPEND", seqno: 2n, message: heartbeat(2) });
    expect(s.delivered).to.deep.equal([1]);
    s.actor.send({ type: "APPEND", seqno: 1n, message: runRequest() });
    const ctx = s.actor.getSnapshot().context;
    expect(s.actor.getSnapshot().value).to.not.equal("terminal");
    expect(ctx.outbound.size).to.equal(0);
    expect(ctx.end).to.equal(undefined);
    expect(ctx.nextSeqno).to.equal(2n);
    expect(s.output("b")).to.equal(true);
  });
});
