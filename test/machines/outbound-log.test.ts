import { expect } from "chai";
import fc from "fast-check";
import { OutboundLog, type OutboundSink } from "../../machines/outbound-log.js";

/** A sink that records copies of the frames it receives (a packed frame is a view into the log's buffer). */
function recorder() {
  const frames: number[][] = [];
  const buffers = new Set<ArrayBufferLike>();
  const ends: unknown[] = [];
  const sink: OutboundSink = {
    frame: (payload) => {
      frames.push([...payload]);
      buffers.add(payload.buffer);
    },
    heartbeat: () => {},
    end: (end) => ends.push(end),
  };
  return { sink, frames, buffers, ends };
}

describe("OutboundLog: the backlog of an ended stream", () => {
  it("replays the same frames, in order, before and after the end packs them", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 60 }), (payloads) => {
        const log = new OutboundLog(() => 0);
        for (const payload of payloads) log.append(payload);
        const live = recorder();
        log.replay(live.sink);
        log.close({ ok: true });
        const late = recorder();
        log.replay(late.sink);
        const follower = recorder();
        log.follow(follower.sink)();
        const expected = payloads.map((p) => [...p]);
        expect(live.frames).to.deep.equal(expected);
        expect(late.frames).to.deep.equal(expected);
        expect(follower.frames).to.deep.equal(expected);
        expect(log.size).to.equal(payloads.length);
        // Packed: every frame of the ended stream is a view of one buffer.
        expect(late.buffers.size).to.equal(payloads.length === 0 ? 0 : 1);
      }),
    );
  });

  it("takes nothing after the end, and a new epoch starts empty", () => {
    const log = new OutboundLog(() => 0);
    const attached = recorder();
    log.follow(attached.sink);
    log.append(Uint8Array.of(1, 2));
    log.close({ ok: true });
    expect(log.append(Uint8Array.of(3))).to.equal(false);
    expect(attached.ends).to.deep.equal([{ ok: true }]);
    log.reopen();
    expect(log.size).to.equal(0);
    log.append(Uint8Array.of(4));
    const late = recorder();
    log.replay(late.sink);
    expect(late.frames).to.deep.equal([[4]]);
    expect(attached.frames).to.deep.equal([[1, 2], [4]]);
  });
});
