// The vocabulary of a ToolCall (machines/tool-call.ts): its input, what it reports to its round, the client events
// the round routes to it, and the engine's commit step it invokes.
import type { ExecClientMessage, ToolCall } from "../proto/gen/agent/v1/agent_pb.js";
import type { InteractionAnswer, ToolCompletion, ToolContext, ToolInvocation } from "../cursor/tools/types.js";
import type { PendingExecReport } from "./pending-exec.js";

export interface ToolCallInput {
  index: number;
  modelCallId: string;
  invocation: ToolInvocation;
  ctx: ToolContext;
  /** The Exec id the round set aside for this call's first Exec, so calls keep their start order on the wire. */
  reservedExecId: number;
}

/** The engine's durable commit of one result: canonical pair appended, ToolCall step recorded with timestamps. */
export interface CommitResultInput {
  callIndex: number;
  invocation: ToolInvocation;
  completion: ToolCompletion;
  startedAtMs: number;
}
export interface CommitResultOutput {
  callIndex: number;
  toolCall: ToolCall;
}

export type ToolCallFailure = "protocol" | "commit";

/** What a call tells its round. */
export type ToolCallReport =
  | { type: "EXEC_ID_WANTED"; index: number }
  | { type: "INTERACTION_ID_WANTED"; index: number }
  | { type: "CALL_COMPLETED"; index: number }
  | { type: "CALL_FAILED"; index: number; cause: ToolCallFailure; message: string };

/** Client messages for one of this call's Execs, as the round routes them by Exec id. */
export type ClientExecEvent =
  | { type: "CLIENT_EXEC"; id: number; message: ExecClientMessage["message"] }
  | { type: "CLIENT_STREAM_CLOSE"; id: number }
  | { type: "CLIENT_THROW"; id: number; error: string };

/** The client's interaction_response, routed by the round to the call that owns the interaction id. */
export type ClientInteractionEvent = { type: "CLIENT_INTERACTION"; id: number; answer: InteractionAnswer };

export type ToolCallEvent =
  | ClientExecEvent
  | ClientInteractionEvent
  | { type: "EXEC_ID_GRANTED"; execId: number }
  | { type: "INTERACTION_ID_GRANTED"; interactionId: number }
  | { type: "ABORT" }
  | PendingExecReport;
