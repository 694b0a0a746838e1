// Reading a bounded request body (docs/protocol/cursor-transport.md §2.5): every body the gateway parses itself has
// a ceiling per request, and all bodies being read or decoded at once share one memory budget, so concurrent large
// bodies cannot add up (the relay streams instead). A declared length over either bound is refused before a byte
// of the body is read; a body without one is charged as it arrives.
import type { IncomingMessage } from "node:http";
import { createGunzip } from "node:zlib";
import { RpcError } from "../cursor/errors.js";

/**
 * Decoding a body makes copies (the hex or JSON text, the decoded bytes, the message): measured, a 60 MiB binary
 * BidiAppend peaks at about 4.5× its size and a JSON one at about 6.5× (docs/performance.md), so a body is charged
 * at this multiple.
 */
export const DECODE_WEIGHT = 7;

/** The memory budget shared by all request bodies in flight. */
export class BodyBudget {
  private used = 0;

  constructor(readonly totalBytes: number) {}

  /** What is charged right now (tests and diagnostics). */
  inUse(): number {
    return this.used;
  }

  lease(): BodyLease {
    let held = 0;
    return {
      grow: (bytes) => {
        const cost = bytes * DECODE_WEIGHT;
        if (this.used + cost > this.totalBytes) {
          throw new RpcError(
            `request bodies in flight exceed the memory budget of ${this.totalBytes} bytes; retry later`,
            "resource_exhausted",
          );
        }
        this.used += cost;
        held += cost;
      },
      release: () => {
        this.used -= held;
        held = 0;
      },
    };
  }
}

export interface BodyLease {
  /** Charges more bytes; throws resource_exhausted when the budget cannot take them. */
  grow(bytes: number): void;
  /** Gives everything back: call once the body and its decoded copies are no longer needed. */
  release(): void;
}

export async function readBody(req: IncomingMessage, limitBytes: number, lease: BodyLease): Promise<Uint8Array> {
  const declared = declaredLength(req);
  if (declared !== undefined) {
    if (declared > limitBytes) throw tooLarge(limitBytes);
    lease.grow(declared);
    return readDeclared(req, declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw tooLarge(limitBytes);
    lease.grow(chunk.length);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** One buffer of the declared size, filled in place: no chunk list and no second copy. */
async function readDeclared(req: IncomingMessage, length: number): Promise<Uint8Array> {
  const body = Buffer.allocUnsafe(length);
  let filled = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    if (filled + chunk.length > length)
      throw new RpcError("request body exceeds its content-length", "invalid_argument");
    chunk.copy(body, filled);
    filled += chunk.length;
  }
  if (filled !== length) throw new RpcError("request body is shorter than its content-length", "invalid_argument");
  return body;
}

function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers["content-length"];
  return header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
}

function tooLarge(limitBytes: number): RpcError {
  return new RpcError(`request body exceeds ${limitBytes} bytes`, "resource_exhausted");
}

/**
 * Unary Connect bodies may be compressed as a whole (Content-Encoding); the output is decoded as a stream, bounded
 * and charged chunk by chunk, so a gzip bomb stops at the limit.
 */
export async function decodeContentEncoding(
  body: Uint8Array,
  encoding: string | undefined,
  limitBytes: number,
  lease: BodyLease,
): Promise<Uint8Array> {
  if (!encoding || encoding === "identity") return body;
  if (encoding !== "gzip")
    throw new RpcError(`unsupported content-encoding ${JSON.stringify(encoding)}`, "unimplemented");
  const gunzip = createGunzip();
  gunzip.end(body);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limitBytes) throw tooLarge(limitBytes);
      lease.grow(chunk.length);
      chunks.push(chunk);
    }
  } catch (e) {
    if (e instanceof RpcError) throw e;
    throw new RpcError(`request body is not valid gzip: ${(e as Error).message}`, "invalid_argument");
  }
  return Buffer.concat(chunks);
}
