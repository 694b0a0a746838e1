// Reading a bounded request body: every body the gateway parses itself has a ceiling (the relay streams instead).
import type { IncomingMessage } from "node:http";
import { gunzipSync } from "node:zlib";
import { RpcError } from "../cursor/errors.js";

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw new RpcError(`request body exceeds ${limitBytes} bytes`, "resource_exhausted");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Unary Connect bodies may be compressed as a whole (Content-Encoding); the result is bounded too. */
export function decodeContentEncoding(body: Uint8Array, encoding: string | undefined, limitBytes: number): Uint8Array {
  if (!encoding || encoding === "identity") return body;
  if (encoding !== "gzip")
    throw new RpcError(`unsupported content-encoding ${JSON.stringify(encoding)}`, "unimplemented");
  try {
    return gunzipSync(body, { maxOutputLength: limitBytes });
  } catch (e) {
    throw new RpcError(`request body is not valid gzip: ${(e as Error).message}`, "invalid_argument");
  }
}
