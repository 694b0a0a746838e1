// Connect EndStreamResponse (docs/protocol/cursor-transport.md §7.2): the last envelope of a stream, flag 0x02, payload
// JSON even though data frames are protobuf. Success is exactly `{}`; failure carries the error JSON with ErrorDetails.
import { type EndStream, RpcError } from "../../cursor/errors.js";
import { connectErrorJson } from "./errors.js";
import { encodeEnvelope, EnvelopeFlags } from "./envelope.js";

export function encodeEndStream(end: EndStream): Uint8Array {
  const json = end.ok ? "{}" : JSON.stringify({ error: connectErrorJson(end.error) });
  return encodeEnvelope(EnvelopeFlags.endStream, new TextEncoder().encode(json));
}

export interface ParsedEndStream {
  error?: { code: string; message: string; details: Array<{ type: string; value: Uint8Array }> };
}

/** Reads an end-stream payload as a client would; throws on anything that is not the Connect shape. */
export function parseEndStream(payload: Uint8Array): ParsedEndStream {
  const json = parseJson(payload);
  if (!isRecord(json)) throw malformed("payload is not a JSON object");
  if (json.error === undefined) return {};
  const error = json.error;
  if (!isRecord(error) || typeof error.code !== "string") throw malformed("error.code is missing");
  if (error.message !== undefined && typeof error.message !== "string")
    throw malformed("error.message is not a string");
  return { error: { code: error.code, message: error.message ?? "", details: parseDetails(error.details) } };
}

function parseDetails(details: unknown): Array<{ type: string; value: Uint8Array }> {
  if (details === undefined) return [];
  if (!Array.isArray(details)) throw malformed("error.details is not an array");
  return details.map((d: unknown, i) => {
    if (!isRecord(d) || typeof d.type !== "string" || typeof d.value !== "string") {
      throw malformed(`error.details[${i}] needs string type and value`);
    }
    return { type: d.type, value: new Uint8Array(Buffer.from(d.value, "base64")) };
  });
}

function parseJson(payload: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
  } catch {
    throw malformed("payload is not UTF-8 JSON");
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function malformed(why: string): RpcError {
  return new RpcError(`protocol error: invalid end-stream: ${why}`, "invalid_argument");
}
