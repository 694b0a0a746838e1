// One request's entry in the registry: its RequestStream actor, the run it carries once the run_request arrived, and
// the bounds and helpers the registry applies to it (docs/protocol/cursor-transport.md §6).
import type { Actor } from "xstate";
import type { AgentRunRequest, AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { encodeFrame } from "../cursor/frames.js";
import { encodeTextDelta } from "../cursor/text-delta-bytes.js";
import { MAX_BACKLOG_FRAMES, type requestStreamMachine } from "../machines/request-stream.js";
import type { OutboundLog } from "../machines/outbound-log.js";
import type { runMachine } from "../machines/run.js";
import type { Logger } from "../log/logger.js";
import type { TimerConfig } from "./config.js";
import type { RunSession } from "./run-session.js";

/** RunSSE streams waiting for their run_request at once (docs/protocol/cursor-transport.md §6.9). */
export const DEFAULT_MAX_WAITING_STREAMS = 1_000;

export interface RunHandle {
  session: RunSession;
  /** Every line about this run carries its request id, conversation id and requested model. */
  log: Logger;
  actor: Actor<typeof runMachine>;
  finished: boolean;
  ended: Promise<void>;
  /** Ends the run `internal` after an unexpected exception (its actor is stopped or failed). */
  crash(err: unknown): void;
}

export interface StreamEntry {
  actor: Actor<typeof requestStreamMachine>;
  /** The stream's outbound log (its machine's, for the whole life of the entry): frames are appended here. */
  outbound: OutboundLog;
  run: RunHandle | undefined;
  handOvers: Set<() => void>;
  /** Encoded bytes of the messages admitted before the run_request (bounded by MAX_EARLY_BYTES). */
  earlyBytes: number;
}

/** What a request may send before its run_request (prewarms, early appends): a prewarm names ids, not content. */
export const MAX_EARLY_BYTES = 16 * 1024 * 1024;

/** What the client is told when the gateway itself failed; the details are in the log, under the request's ids. */
export const INTERNAL_MESSAGE = "byok-gateway internal error; its log has the details for this request_id";

/** The ids every log line of a run carries, and the model the client asked for. */
export function runFields(requestId: string, request: AgentRunRequest): object {
  return {
    request_id: requestId,
    conversation_id: request.conversationId,
    model: request.requestedModel?.modelId ?? "",
  };
}

/** Configured stream timers override the machine's captured defaults one by one (the heartbeat's is its input). */
export function streamDelays(t: TimerConfig) {
  return {
    ...(t.reconnectGraceMs ? { reconnectGrace: t.reconnectGraceMs } : {}),
    ...(t.terminalRetentionMs ? { retention: t.terminalRetentionMs } : {}),
    ...(t.runRequestWaitMs ? { runRequestWait: t.runRequestWaitMs } : {}),
  };
}

/** What a run emits onto its stream. */
export interface FrameOutputs {
  emit(message: AgentServerMessage): void;
  /** A text_delta written straight from its text: the per-token frame, without a message object to encode. */
  emitTextDelta(text: string): void;
}

/**
 * What a run emits, onto its stream: encoded once (the backlog and every subscriber share the bytes, and a repeated
 * frame shares them too) and appended to the log the stream owns, which records and writes it; not a RequestStream
 * event (issue 17), the stream's heartbeat reads the log's silence. Past the backlog bound the run is told instead.
 */
export function frameEmitter(entry: StreamEntry, handle: RunHandle): FrameOutputs {
  let last: { message: AgentServerMessage; payload: Uint8Array } | undefined;
  const append = (payload: Uint8Array) => {
    if (entry.outbound.size >= MAX_BACKLOG_FRAMES) {
      handle.actor.send({ type: "BACKLOG_EXCEEDED", message: `the run exceeded ${MAX_BACKLOG_FRAMES} stream frames` });
      return;
    }
    entry.outbound.append(payload);
  };
  return {
    emit(message) {
      if (handle.finished) return;
      if (last?.message !== message) last = { message, payload: encodeFrame(message) };
      append(last.payload);
    },
    emitTextDelta(text) {
      if (!handle.finished) append(encodeTextDelta(text));
    },
  };
}
