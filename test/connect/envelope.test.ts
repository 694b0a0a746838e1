import { expect } from "chai";
import { gzipSync } from "node:zlib";
import { decodePayload, encodeEnvelope, EnvelopeFlags, EnvelopeReader } from "../../transport/connect/envelope.js";
import { RpcError } from "../../cursor/errors.js";

const bytes = (...xs: number[]) => new Uint8Array(xs);
const text = (s: string) => new TextEncoder().encode(s);

function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** A bare 5-byte header announcing `length` payload bytes that never follow. */
function headerClaiming(length: number): Uint8Array {
  const header = new Uint8Array(5);
  new DataView(header.buffer).setUint32(1, length, false);
  return header;
}

function expectConnectError(fn: () => unknown, code: string): RpcError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(RpcError);
    expect((err as RpcError).code).to.equal(code);
    return err as RpcError;
  }
  expect.fail(`expected a RpcError ${code}`);
}

describe("connect envelope", () => {
  it("encodes a 5-byte header with flags and a big-endian length", () => {
    const payload = new Uint8Array(0x010203).fill(7);
    const frame = encodeEnvelope(EnvelopeFlags.endStream, payload);
    expect([...frame.subarray(0, 5)]).to.deep.equal([0x02, 0x00, 0x01, 0x02, 0x03]);
    expect(frame.byteLength).to.equal(5 + 0x010203);
    expect(frame[5]).to.equal(7);
  });

  it("encodes an empty payload as a bare header", () => {
    expect([...encodeEnvelope(0, bytes())]).to.deep.equal([0, 0, 0, 0, 0]);
  });

  it("rejects flags that do not fit one byte", () => {
    expect(() => encodeEnvelope(0x100, bytes())).to.throw(RangeError);
    expect(() => encodeEnvelope(-1, bytes())).to.throw(RangeError);
  });

  it("round-trips through the reader", () => {
    const reader = new EnvelopeReader();
    const out = reader.push(encodeEnvelope(0x01, text("hello")));
    expect(out).to.have.length(1);
    expect(out[0]!.flags).to.equal(0x01);
    expect(Buffer.from(out[0]!.payload).toString()).to.equal("hello");
    reader.end();
  });

  it("reads several envelopes from one chunk, including an empty one", () => {
    const chunk = concat([encodeEnvelope(0, text("a")), encodeEnvelope(0, bytes()), encodeEnvelope(2, text("{}"))]);
    const out = new EnvelopeReader().push(chunk);
    expect(out.map((e) => [e.flags, Buffer.from(e.payload).toString()])).to.deep.equal([
      [0, "a"],
      [0, ""],
      [2, "{}"],
    ]);
  });

  it("reads the same envelopes whatever byte the chunks are split at", () => {
    const frames = [
      encodeEnvelope(0, text("first message")),
      encodeEnvelope(1, text("x")),
      encodeEnvelope(2, text("{}")),
    ];
    const stream = concat(frames);
    for (let cut = 0; cut <= stream.byteLength; cut++) {
      const reader = new EnvelopeReader();
      const out = [...reader.push(stream.subarray(0, cut)), ...reader.push(stream.subarray(cut))];
      expect(
        out.map((e) => Buffer.from(e.payload).toString()),
        `cut at ${cut}`,
      ).to.deep.equal(["first message", "x", "{}"]);
      reader.end();
    }
  });

  it("reads envelopes fed one byte at a time", () => {
    const stream = concat([encodeEnvelope(0, text("abc")), encodeEnvelope(2, text("{}"))]);
    const reader = new EnvelopeReader();
    const out = [...stream].flatMap((b) => reader.push(bytes(b)));
    expect(out.map((e) => e.flags)).to.deep.equal([0, 2]);
    expect(Buffer.from(out[0]!.payload).toString()).to.equal("abc");
  });

  it("returns payloads that do not alias the pushed chunk", () => {
    const chunk = encodeEnvelope(0, text("abc"));
    const [env] = new EnvelopeReader().push(chunk);
    chunk.fill(0);
    expect(Buffer.from(env!.payload).toString()).to.equal("abc");
  });

  it("rejects a payload larger than the limit as soon as its header arrives", () => {
    const reader = new EnvelopeReader({ maxPayloadBytes: 10 });
    const err = expectConnectError(() => reader.push(headerClaiming(11)), "resource_exhausted");
    expect(err.message).to.contain("11 bytes");
  });

  it("accepts a payload exactly at the limit", () => {
    const out = new EnvelopeReader({ maxPayloadBytes: 10 }).push(encodeEnvelope(0, new Uint8Array(10)));
    expect(out[0]!.payload.byteLength).to.equal(10);
  });

  it("defaults the limit to 16 MiB", () => {
    expect(new EnvelopeReader().push(headerClaiming(16 * 1024 * 1024))).to.deep.equal([]);
    expectConnectError(() => new EnvelopeReader().push(headerClaiming(16 * 1024 * 1024 + 1)), "resource_exhausted");
  });

  it("fails end() on a truncated header or payload", () => {
    const frame = encodeEnvelope(0, text("abcdef"));
    for (const cut of [1, 4, 5, 10]) {
      const reader = new EnvelopeReader();
      reader.push(frame.subarray(0, cut));
      expectConnectError(() => reader.end(), "invalid_argument");
    }
  });

  it("gunzips a payload with the compressed flag under gzip encoding", () => {
    const env = { flags: EnvelopeFlags.compressed, payload: new Uint8Array(gzipSync(text("zipped"))) };
    expect(Buffer.from(decodePayload(env, "gzip")).toString()).to.equal("zipped");
  });

  it("leaves an uncompressed payload as is under either encoding", () => {
    const env = { flags: 0, payload: text("plain") };
    expect(decodePayload(env, "gzip")).to.equal(env.payload);
    expect(decodePayload(env, "identity")).to.equal(env.payload);
  });

  it("rejects a compressed flag when the stream declared no encoding", () => {
    const env = { flags: EnvelopeFlags.compressed, payload: new Uint8Array(gzipSync(text("x"))) };
    expectConnectError(() => decodePayload(env, "identity"), "invalid_argument");
  });

  it("rejects a compressed payload that is not gzip", () => {
    expectConnectError(() => decodePayload({ flags: 1, payload: text("not gzip") }, "gzip"), "invalid_argument");
  });

  it("rejects a compressed payload that inflates beyond the limit", () => {
    const env = { flags: 1, payload: new Uint8Array(gzipSync(new Uint8Array(1000))) };
    expectConnectError(() => decodePayload(env, "gzip", 999), "resource_exhausted");
    expect(decodePayload(env, "gzip", 1000).byteLength).to.equal(1000);
  });
});
