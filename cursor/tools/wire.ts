// Small shared pieces of the drivers' wire handling: building the ToolCall card and answering a client result
// that does not belong to the exec the driver asked for (docs/protocol/cursor-tools.md §3.4: a mismatch is a protocol
// error).
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ToolCallSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecClientMessage, ToolCall } from "../../proto/gen/agent/v1/agent_pb.js";
import type { DriverStep } from "./types.js";

export type ClientMessage = ExecClientMessage["message"];

/** The ToolCall card; `callId` is kept byte-for-byte (it may hold a real newline, docs/protocol/cursor-tools.md §2.6).
 * */
export function toolCall(callId: string, tool: MessageInitShape<typeof ToolCallSchema>["tool"]): ToolCall {
  return create(ToolCallSchema, { toolCallId: callId, tool });
}

/** The terminal step: canonical string and typed card together (docs/protocol/cursor-tools.md §2.5). */
export function completed<S>(state: S, content: string, isError: boolean, card: ToolCall): DriverStep<S> {
  return { kind: "complete", completion: { content, isError, toolCall: card }, state };
}

/** protobuf-es oneof case name → the proto field name used on the wire and in the seeds. */
export function wireName(oneofCase: string): string {
  return oneofCase.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * Answer for a message whose oneof is not the expected one. An empty oneof is not a result
 * (docs/protocol/cursor-tools.md §2.5):
 * keep waiting. Anything else is a protocol error naming what was expected and what arrived.
 */
export function unexpectedMessage<S>(tool: string, expected: string, message: ClientMessage, state: S): DriverStep<S> {
  if (message.case === undefined) return { kind: "wait", state };
  return {
    kind: "protocol_error",
    message: `${tool}: expected ${wireName(expected)} but the client sent ${wireName(message.case)}`,
  };
}
