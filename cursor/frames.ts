// Builders for the AgentServerMessage branches the engine emits (docs/protocol/cursor-transport.md §4.3;
// docs/protocol/cursor-tools.md §2; docs/protocol/cursor-run.md §9). Machines call these so the wire shapes live in one
// place.
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  AgentServerMessageSchema,
  type InteractionUpdateSchema,
  ThinkingStyle,
  type AgentServerMessage,
  type ConversationStateStructure,
  type ExecServerMessage,
  type InteractionQuery,
  type ToolCall,
  type ToolCallDelta,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { Usage } from "../providers/types.js";
import { encodeTextDelta } from "./text-delta-bytes.js";

/** Frames whose wire bytes were known when they were built (a checkpoint's state is encoded once, for its id). */
const preEncoded = new WeakMap<AgentServerMessage, Uint8Array>();

/** A frame's wire bytes: the ones it was built with, else encoded now (a text delta, the per-token frame, directly). */
export function encodeFrame(message: AgentServerMessage): Uint8Array {
  const m = message.message;
  if (m.case === "interactionUpdate" && m.value.message.case === "textDelta")
    return encodeTextDelta(m.value.message.value.text);
  return preEncoded.get(message) ?? toBinary(AgentServerMessageSchema, message);
}

const CHECKPOINT_FIELD = AgentServerMessageSchema.field.conversationCheckpointUpdate!.number;
/** The first byte of every encoded checkpoint frame: its one field's tag (a field number below 16 is one byte). */
const CHECKPOINT_TAG = (CHECKPOINT_FIELD << 3) | WireType.LengthDelimited;

/**
 * An encoded frame is a checkpoint update. Its bulk is the history's root blob ids, SHA-256 digests that gzip cannot
 * shrink: 200 turns in, 34 KB frames compressed to 0.80 of their size for ~0.5 ms of CPU each, twice a turn.
 */
export const isCheckpointFrame = (payload: Uint8Array): boolean => payload[0] === CHECKPOINT_TAG;

type Update = NonNullable<MessageInitShape<typeof InteractionUpdateSchema>["message"]>;

function update(message: Update): AgentServerMessage {
  return create(AgentServerMessageSchema, { message: { case: "interactionUpdate", value: { message } } });
}

export const frames = {
  textDelta: (text: string) => update({ case: "textDelta", value: { text } }),
  thinkingDelta: (text: string) =>
    update({ case: "thinkingDelta", value: { text, thinkingStyle: ThinkingStyle.DEFAULT } }),
  thinkingCompleted: (durationMs: number) =>
    update({
      case: "thinkingCompleted",
      value: { thinkingDurationMs: Math.min(Math.max(1, Math.round(durationMs)), 2 ** 31 - 1) },
    }),
  tokenDelta: (tokens: number) => update({ case: "tokenDelta", value: { tokens } }),
  heartbeat: () => update({ case: "heartbeat", value: {} }),
  summaryStarted: () => update({ case: "summaryStarted", value: {} }),
  summary: (summary: string) => update({ case: "summary", value: { summary } }),
  summaryCompleted: () => update({ case: "summaryCompleted", value: {} }),
  partialToolCall: (callId: string, modelCallId: string, toolCall: ToolCall, argsTextDelta = "") =>
    update({ case: "partialToolCall", value: { callId, modelCallId, toolCall, argsTextDelta } }),
  toolCallStarted: (callId: string, modelCallId: string, toolCall: ToolCall) =>
    update({ case: "toolCallStarted", value: { callId, modelCallId, toolCall } }),
  toolCallDelta: (callId: string, modelCallId: string, toolCallDelta: ToolCallDelta) =>
    update({ case: "toolCallDelta", value: { callId, modelCallId, toolCallDelta } }),
  toolCallCompleted: (callId: string, modelCallId: string, toolCall: ToolCall) =>
    update({ case: "toolCallCompleted", value: { callId, modelCallId, toolCall } }),
  /** A step of the turn is over: its 1-based position in the turn and how long it took. */
  stepCompleted: (stepId: number, durationMs: number) =>
    update({
      case: "stepCompleted",
      value: { stepId: BigInt(stepId), stepDurationMs: BigInt(Math.max(0, Math.round(durationMs))) },
    }),
  turnEnded: (u: Usage) =>
    update({
      case: "turnEnded",
      value: {
        ...(u.inputTokens !== undefined ? { inputTokens: BigInt(u.inputTokens) } : {}),
        ...(u.outputTokens !== undefined ? { outputTokens: BigInt(u.outputTokens) } : {}),
        ...(u.cacheReadTokens !== undefined ? { cacheReadTokens: BigInt(u.cacheReadTokens) } : {}),
        ...(u.cacheWriteTokens !== undefined ? { cacheWriteTokens: BigInt(u.cacheWriteTokens) } : {}),
        ...(u.reasoningTokens !== undefined ? { reasoningTokens: BigInt(u.reasoningTokens) } : {}),
      },
    }),
  exec: (id: number, execId: string, message: ExecServerMessage["message"]) =>
    create(AgentServerMessageSchema, { message: { case: "execServerMessage", value: { id, execId, message } } }),
  interactionQuery: (id: number, query: InteractionQuery["query"]) =>
    create(AgentServerMessageSchema, { message: { case: "interactionQuery", value: { id, query } } }),
  execAbort: (id: number) =>
    create(AgentServerMessageSchema, {
      message: { case: "execServerControlMessage", value: { message: { case: "abort", value: { id } } } },
    }),
  kvSet: (id: number, blobId: Uint8Array, blobData: Uint8Array) =>
    create(AgentServerMessageSchema, {
      message: {
        case: "kvServerMessage",
        value: { id, message: { case: "setBlobArgs", value: { blobId, blobData } } },
      },
    }),
  kvGet: (id: number, blobId: Uint8Array) =>
    create(AgentServerMessageSchema, {
      message: { case: "kvServerMessage", value: { id, message: { case: "getBlobArgs", value: { blobId } } } },
    }),
  /** `encoded`: the state's own bytes when the caller has them (its blob): the frame embeds them as they are. */
  checkpoint: (state: ConversationStateStructure, encoded?: Uint8Array) => {
    const message = create(AgentServerMessageSchema, {
      message: { case: "conversationCheckpointUpdate", value: state },
    });
    if (encoded) {
      preEncoded.set(
        message,
        new BinaryWriter().tag(CHECKPOINT_FIELD, WireType.LengthDelimited).bytes(encoded).finish(),
      );
    }
    return message;
  },
};
