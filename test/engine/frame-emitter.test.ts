import { expect } from "chai";
import { encodeFrame, frames } from "../../cursor/frames.js";
import { OutboundLog } from "../../machines/outbound-log.js";
import { MAX_BACKLOG_FRAMES } from "../../machines/request-stream.js";
import { frameEmitter, type RunHandle, type StreamEntry } from "../../engine/stream-entry.js";

/** The two fields of an entry and a handle the emitter reads, the run's events recorded. */
function rig() {
  const outbound = new OutboundLog(() => 0);
  const events: unknown[] = [];
  const handle = { finished: false, actor: { send: (e: unknown) => events.push(e) } };
  const out = frameEmitter({ outbound } as unknown as StreamEntry, handle as unknown as RunHandle);
  return { outbound, events, handle, ...out };
}

describe("frameEmitter: a run's frames onto its stream", () => {
  it("appends each frame once encoded, shares the bytes of a repeated frame, and stops after the run finished", () => {
    const r = rig();
    const payloads: Uint8Array[] = [];
    r.outbound.follow({ frame: (p) => payloads.push(p), heartbeat: () => {}, end: () => {} });
    const repeated = frames.textDelta("the same message twice");
    r.emit(frames.textDelta("a"));
    r.emit(repeated);
    r.emit(repeated);
    r.handle.finished = true;
    r.emit(frames.textDelta("late"));
    expect(r.outbound.size).to.equal(3);
    expect(payloads[1]).to.equal(payloads[2]);
    expect(r.events).to.deep.equal([]);
  });

  it("writes a text delta from its text, the same bytes its message encodes to", () => {
    const r = rig();
    const payloads: Uint8Array[] = [];
    r.outbound.follow({ frame: (p) => payloads.push(p), heartbeat: () => {}, end: () => {} });
    r.emitTextDelta("héllo 🌍");
    r.handle.finished = true;
    r.emitTextDelta("late");
    expect(payloads).to.deep.equal([encodeFrame(frames.textDelta("héllo 🌍"))]);
  });

  it("tells the run once the backlog holds its bound, and appends nothing more", () => {
    const r = rig();
    const delta = frames.textDelta("x");
    for (let i = 0; i < MAX_BACKLOG_FRAMES; i++) r.emit(delta);
    expect(r.events).to.deep.equal([]);
    r.emitTextDelta("one too many");
    expect(r.outbound.size).to.equal(MAX_BACKLOG_FRAMES);
    expect(r.events).to.deep.equal([
      { type: "BACKLOG_EXCEEDED", message: `the run exceeded ${MAX_BACKLOG_FRAMES} stream frames` },
    ]);
  });
});
