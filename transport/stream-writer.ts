// Writing AgentServerMessages onto an open streaming response (RunSSE and Run share it;
// docs/protocol/cursor-transport.md §2.3, §4.3): 5-byte envelopes, frames of 1 KiB or more gzipped when the client
// accepts it, frames written in one synchronous run leaving in one socket write.
import type { ServerResponse } from "node:http";
import { toBinary } from "@bufbuild/protobuf";
import { gzipSync } from "node:zlib";
import { AgentServerMessageSchema } from "../proto/gen/agent/v1/agent_pb.js";
import { frames, isCheckpointFrame } from "../cursor/frames.js";
import { encodeEnvelope, EnvelopeFlags } from "./connect/envelope.js";

const COMPRESS_MIN_BYTES = 1024;
/** interaction_update.heartbeat, encoded once. */
export const HEARTBEAT = toBinary(AgentServerMessageSchema, frames.heartbeat());

/**
 * A writer of encoded AgentServerMessage payloads; writes after the body ended are dropped. Koa hands an HTTP/2
 * request the compatibility response, which has the same surface.
 */
export function streamWriter(res: ServerResponse, gzip: boolean): (payload: Uint8Array) => void {
  // The frames one machine event produces (a tool card and its delta, a checkpoint's SETs) leave in one syscall
  // and one TCP segment. Uncorked in a microtask, not on the next tick or event-loop turn: a nextTick waits until the
  // whole microtask cascade of the provider read ends (the rest of its events, a run's end and final checkpoint),
  // and the first token with it (issue 17). end() flushes whatever is still corked.
  let corked = false;
  let last: { payload: Uint8Array; frame: Uint8Array } | undefined;
  const uncork = () => {
    corked = false;
    res.uncork();
  };
  return (payload) => {
    if (res.writableEnded) return;
    if (!corked) {
      corked = true;
      res.cork();
      queueMicrotask(uncork);
    }
    // A repeated frame (the final checkpoint is sent twice) is enveloped and compressed once.
    if (last?.payload !== payload) last = { payload, frame: encodeFrame(payload, gzip) };
    res.write(last.frame);
  };
}

/** Frames of 1 KiB or more are gzipped when the client accepts it, except a checkpoint update (isCheckpointFrame). */
function encodeFrame(payload: Uint8Array, gzip: boolean): Uint8Array {
  if (gzip && payload.length >= COMPRESS_MIN_BYTES && !isCheckpointFrame(payload))
    return encodeEnvelope(EnvelopeFlags.compressed, gzipSync(payload));
  return encodeEnvelope(0, payload);
}

/** True when a Connect-Accept-Encoding header lists gzip. */
export function acceptsGzip(header: string): boolean {
  return header.split(",").some((v) => v.trim() === "gzip");
}
