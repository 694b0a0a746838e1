// The sequencer and the backpressure queue (docs/protocol/aep.md §5, §6, §8.1): seq from 1 in wire
// order, dropped deltas take none, only deltas and raw are dropped, control goes ahead, and the ordering rules are
// enforced where events enter, whatever the order they were produced in.
import { expect } from "chai";
import fc from "fast-check";
import { OutboundQueue, admissionOf, type Socket } from "../../aep/wire/backpressure.js";
import type { ServerEnvelope, ServerEvent } from "../../aep/wire/envelope.js";
import { SEQ_RESERVATION, Sequencer } from "../../aep/wire/sequencer.js";

/** A socket the test stalls by hand: while `blocked`, writes stay buffered (one byte each) until `drain`. */
class FakeSocket implements Socket {
  sent: ServerEnvelope[] = [];
  blocked = false;
  private callbacks: Array<() => void> = [];
  get bufferedAmount() {
    return this.callbacks.length;
  }
  send(text: string, done: () => void) {
    this.sent.push(JSON.parse(text));
    if (this.blocked) this.callbacks.push(done);
    else done();
  }
  drain() {
    this.blocked = false;
    for (const cb of this.callbacks.splice(0)) cb();
  }
}

function rig(limits = { capacity: 4, hardLimit: 8, socketHighWater: 1 }, lastSeq = 0) {
  const violations: string[] = [];
  let overflowed = 0;
  const marks: number[] = [];
  const sequencer = new Sequencer({
    sessionId: "sess_t",
    lastSeq,
    onViolation: (m) => violations.push(m),
    onOverflow: () => overflowed++,
    onReserve: (m) => marks.push(m),
    onLogged: () => {},
  });
  const socket = new FakeSocket();
  const queue = new OutboundQueue(socket, (e) => sequencer.commit(e), limits);
  sequencer.attach(queue);
  return { sequencer, socket, queue, violations, marks, overflows: () => overflowed };
}

const running: ServerEvent = { type: "state", data: { state: "running" } };
const start = (id: string): ServerEvent => ({
  type: "message.start",
  data: { id, role: "assistant", content_type: "text" },
});
const delta = (id: string, content: string): ServerEvent => ({
  type: "message.delta",
  data: { message_id: id, content },
});
const end = (id: string): ServerEvent => ({ type: "message.end", data: { message_id: id } });
const done: ServerEvent = { type: "done", data: { success: true } };
const completed = (id: string): ServerEvent => ({
  type: "runtime.execution.completed",
  data: { execution_id: id, status: "completed" },
});

describe("AEP sequencer and backpressure", () => {
  it("numbers envelopes from 1 in the order they reach the socket", () => {
    const { sequencer, socket } = rig();
    sequencer.emit(running, "x1");
    sequencer.emit(start("m"), "x1");
    sequencer.emit(delta("m", "a"), "x1");
    expect(socket.sent.map((e) => e.seq)).to.deep.equal([1, 2, 3]);
  });

  it("reserves seqs ahead: the mark given to the store is never below a seq sent, so a restart from it never goes back", () => {
    const { sequencer, socket, marks } = rig({ capacity: 10_000, hardLimit: 20_000, socketHighWater: 10_000 });
    sequencer.emit(running, "x1");
    sequencer.emit(start("m"), "x1");
    for (let i = 0; i < 2 * SEQ_RESERVATION; i++) {
      sequencer.emit(delta("m", "a"), "x1");
      // Each seq is covered by a mark handed out by the time it was committed.
      expect(marks.at(-1)).to.be.at.least(socket.sent.at(-1)!.seq);
    }
    // Each new block is asked for while half of the previous one is left, not at every seq.
    expect(marks.length).to.be.lessThan(6);
    // The gateway dies here; the restart begins at the last stored mark.
    const restarted = rig(undefined, marks.at(-1)!);
    restarted.sequencer.emit({ type: "state", data: { state: "idle" } });
    expect(restarted.socket.sent[0]!.seq).to.be.greaterThan(socket.sent.at(-1)!.seq);
  });

  it("drops only message.delta and raw when the queue is full; they take no seq; done says dropped", () => {
    const { sequencer, socket, queue } = rig();
    sequencer.emit(running, "x1");
    sequencer.emit(start("m"), "x1");
    socket.blocked = true;
    for (let i = 0; i < 10; i++) sequencer.emit(delta("m", String(i)), "x1");
    sequencer.emit({ type: "raw", data: { kind: "k", raw: {} } });
    expect(queue.length).to.equal(4);
    sequencer.emit(end("m"), "x1");
    sequencer.emit(done, "x1");
    sequencer.emit(completed("x1"), "x1");
    socket.drain();
    const kinds = socket.sent.map((e) => e.event.type);
    // One delta was already in the socket's buffer, four waited in the queue, the rest were dropped.
    expect(kinds).to.deep.equal([
      "state",
      "message.start",
      ...Array(5).fill("message.delta"),
      "message.end",
      "done",
      "runtime.execution.completed",
    ]);
    expect(socket.sent.map((e) => e.seq)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(socket.sent.find((e) => e.event.type === "done")!.event.data).to.deep.equal({
      success: true,
      dropped: true,
    });
  });

  it("puts control priority (input.ack, pong) ahead of waiting data, still in seq order on the wire", () => {
    const { sequencer, socket } = rig();
    socket.blocked = true;
    sequencer.emit(running, "x1");
    sequencer.emit(start("m"), "x1");
    sequencer.emit({ type: "input.ack", data: { client_message_id: "c", execution_id: "x2", status: "accepted" } });
    socket.drain();
    // state(running) was already written; the ack overtakes the waiting message.start.
    expect(socket.sent.map((e) => e.event.type)).to.deep.equal(["state", "input.ack", "message.start"]);
    expect(socket.sent.map((e) => e.seq)).to.deep.equal([1, 2, 3]);
  });

  it("gives up a connection that cannot take even the kept events", () => {
    const { sequencer, socket, overflows } = rig();
    socket.blocked = true;
    sequencer.emit(running, "x1");
    for (let i = 0; i < 10; i++) sequencer.emit({ type: "step", data: { id: `s${i}`, step_type: "t" } }, "x1");
    expect(overflows()).to.be.greaterThan(0);
    expect(admissionOf({ type: "done", data: { success: true } })).to.equal("kept");
  });

  const refusals: Array<[string, Array<[ServerEvent, string?]>]> = [
    ["content outside a turn", [[delta("m", "x"), "x1"]]],
    [
      "a second state(running)",
      [
        [running, "x1"],
        [running, "x2"],
      ],
    ],
    ["state(idle) inside a turn", [[running, "x1"], [{ type: "state", data: { state: "idle" } }]]],
    [
      "a delta of a message never started",
      [
        [running, "x1"],
        [delta("m", "x"), "x1"],
      ],
    ],
    [
      "anything of the turn after done",
      [
        [running, "x1"],
        [done, "x1"],
        [start("m"), "x1"],
      ],
    ],
    [
      "a second done",
      [
        [running, "x1"],
        [done, "x1"],
        [done, "x1"],
      ],
    ],
    [
      "a turn error after done",
      [
        [running, "x1"],
        [done, "x1"],
        [{ type: "error", data: { code: "INTERNAL_ERROR", message: "late" } }, "x1"],
      ],
    ],
    [
      "runtime.execution.completed before done",
      [
        [running, "x1"],
        [completed("x1"), "x1"],
      ],
    ],
    ["runtime.execution.completed twice", [[running, "x1"], [done, "x1"], [completed("x1")], [completed("x1")]]],
    [
      "input.ack delivered without accepted",
      [[{ type: "input.ack", data: { client_message_id: "c", execution_id: "x", status: "delivered" } }]],
    ],
  ];
  for (const [what, events] of refusals) {
    it(`refuses ${what}`, () => {
      const { sequencer, socket, violations } = rig({ capacity: 100, hardLimit: 100, socketHighWater: 1 });
      for (const [event, exec] of events) sequencer.emit(event, exec);
      expect(violations).to.have.length(1);
      expect(socket.sent).to.have.length(events.length - 1);
    });
  }

  it("whatever is produced and however the socket stalls, the wire holds strictly rising seqs and only deltas are lost", () => {
    const step = fc.oneof(
      fc.constant<"delta">("delta"),
      fc.constant<"raw">("raw"),
      fc.constant<"ack">("ack"),
      fc.constant<"block">("block"),
      fc.constant<"drain">("drain"),
      fc.constant<"message">("message"),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        // A hard limit the steps cannot reach: giving up the connection is the other test's subject.
        const { sequencer, socket, violations } = rig({ capacity: 4, hardLimit: 1_000, socketHighWater: 1 });
        let acks = 0;
        let produced = 0;
        sequencer.emit(running, "x1");
        sequencer.emit(start("m"), "x1");
        for (const s of steps) {
          if (s === "delta") sequencer.emit(delta("m", "d"), "x1");
          if (s === "raw") sequencer.emit({ type: "raw", data: { kind: "k", raw: null } });
          if (s === "ack")
            sequencer.emit({
              type: "input.ack",
              data: { client_message_id: `c${acks}`, execution_id: `x${acks++}`, status: "accepted" },
            });
          if (s === "message")
            produced++, sequencer.emit({ type: "step", data: { id: `s${produced}`, step_type: "t" } }, "x1");
          if (s === "block") socket.blocked = true;
          if (s === "drain") socket.drain();
        }
        sequencer.emit(end("m"), "x1");
        sequencer.emit(done, "x1");
        socket.drain();
        socket.drain();
        const seqs = socket.sent.map((e) => e.seq);
        expect(seqs).to.deep.equal(seqs.map((_, i) => i + 1));
        const kinds = socket.sent.map((e) => e.event.type);
        expect(kinds.filter((k) => k === "input.ack")).to.have.length(acks);
        expect(kinds.filter((k) => k === "step")).to.have.length(produced);
        expect(kinds.at(-1)).to.equal("done");
        expect(violations).to.deep.equal([]);
        const lost = steps.filter((s) => s === "delta").length - kinds.filter((k) => k === "message.delta").length;
        expect(Boolean((socket.sent.at(-1)!.event.data as { dropped?: boolean }).dropped)).to.equal(lost > 0);
      }),
      { numRuns: 300 },
    );
  });
});
