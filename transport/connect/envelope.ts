// Connect streaming envelope (docs/protocol/cursor-transport.md §2): 1 byte of flags, a 4-byte big-endian payload
// length, then the payload. Flags are bits, not an enum: 0x01 compressed, 0x02 end of stream.
import { gunzipSync } from "node:zlib";
import { RpcError } from "../../cursor/errors.js";

export const EnvelopeFlags = { compressed: 0x01, endStream: 0x02 } as const;

export interface Envelope {
  flags: number;
  payload: Uint8Array;
}

const headerBytes = 5;
const defaultMaxPayloadBytes = 16 * 1024 * 1024;

export function encodeEnvelope(flags: number, payload: Uint8Array): Uint8Array {
  if (!Number.isInteger(flags) || flags < 0 || flags > 0xff)
    throw new RangeError(`envelope flags out of range: ${flags}`);
  if (payload.byteLength > 0xffffffff) throw new RangeError(`envelope payload too large: ${payload.byteLength} bytes`);
  const frame = new Uint8Array(headerBytes + payload.byteLength);
  const view = new DataView(frame.buffer);
  view.setUint8(0, flags);
  view.setUint32(1, payload.byteLength, false);
  frame.set(payload, headerBytes);
  return frame;
}

/** Incremental reader: HTTP chunks may split an envelope (even its header) anywhere. */
export class EnvelopeReader {
  private readonly maxPayloadBytes: number;
  private chunks: Uint8Array[] = [];
  private buffered = 0;
  private header: { flags: number; length: number } | undefined;

  constructor(opts?: { maxPayloadBytes?: number }) {
    this.maxPayloadBytes = opts?.maxPayloadBytes ?? defaultMaxPayloadBytes;
  }

  /** Bytes held for an envelope not yet complete. */
  get pendingBytes(): number {
    return this.buffered;
  }

  push(chunk: Uint8Array): Envelope[] {
    if (chunk.byteLength > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.byteLength;
    }
    const envelopes: Envelope[] = [];
    for (;;) {
      if (this.header === undefined) {
        if (this.buffered < headerBytes) break;
        this.header = this.readHeader();
      }
      if (this.buffered < this.header.length) break;
      envelopes.push({ flags: this.header.flags, payload: this.take(this.header.length) });
      this.header = undefined;
    }
    return envelopes;
  }

  end(): void {
    if (this.header === undefined && this.buffered === 0) return;
    const have = this.buffered + (this.header === undefined ? 0 : headerBytes);
    const want = this.header === undefined ? headerBytes : headerBytes + this.header.length;
    throw new RpcError(
      `protocol error: stream ended inside an envelope (${have} of ${want} bytes)`,
      "invalid_argument",
    );
  }

  private readHeader(): { flags: number; length: number } {
    const bytes = this.take(headerBytes);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const length = view.getUint32(1, false);
    // Checked before the payload arrives, so an oversized frame never gets buffered.
    if (length > this.maxPayloadBytes) {
      throw new RpcError(
        `envelope payload of ${length} bytes exceeds the limit of ${this.maxPayloadBytes} bytes`,
        "resource_exhausted",
      );
    }
    return { flags: view.getUint8(0), length };
  }

  /** Removes exactly n buffered bytes (n <= buffered) into a fresh array the caller owns. */
  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const head = this.chunks[0]!;
      const used = Math.min(head.byteLength, n - filled);
      out.set(head.subarray(0, used), filled);
      filled += used;
      if (used === head.byteLength) this.chunks.shift();
      else this.chunks[0] = head.subarray(used);
    }
    this.buffered -= n;
    return out;
  }
}

/** The payload as plain bytes, gunzipped when the compressed flag is set. */
export function decodePayload(
  env: Envelope,
  encoding: "gzip" | "identity",
  maxPayloadBytes = defaultMaxPayloadBytes,
): Uint8Array {
  if ((env.flags & EnvelopeFlags.compressed) === 0) return env.payload;
  if (encoding === "identity") {
    throw new RpcError("protocol error: compressed envelope on a stream without content encoding", "invalid_argument");
  }
  try {
    return gunzipSync(env.payload, { maxOutputLength: maxPayloadBytes });
  } catch (cause) {
    if (cause instanceof RangeError) {
      throw new RpcError(`decompressed envelope exceeds the limit of ${maxPayloadBytes} bytes`, "resource_exhausted");
    }
    throw new RpcError(`protocol error: invalid gzip envelope: ${(cause as Error).message}`, "invalid_argument");
  }
}
