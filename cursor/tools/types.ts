// Contract between the tool-agnostic ToolRound / PendingExec machines and the per-tool Cursor codecs
// (docs/protocol/cursor-tools.md §2–§5, §5.5, §5.6; docs/protocol/cursor-tools.md). A driver is pure: it
// takes its own state and a client message and says what happens next. The machines own ids, timing,
// persistence and frame emission; drivers own only the tool's wire shapes.
import type {
  ExecClientMessage,
  ExecServerMessage,
  InteractionQuery,
  InteractionResponse,
  ToolCall,
  SubagentModelOverride,
  ToolCallDelta,
} from "../../proto/gen/agent/v1/agent_pb.js";

/** A complete, strictly parsed model tool call. `callId` is opaque and reused byte-for-byte. */
export interface ToolInvocation {
  callId: string;
  modelCallId: string;
  name: string;
  argumentsJson: string;
  /** The result of JSON.parse(argumentsJson); always an object. */
  args: Record<string, unknown>;
}

/** Per-run facts some tools need (Shell: conversation, terminals folder; Task: the subagent settings). */
export interface ToolContext {
  conversationId: string;
  terminalsFolder?: string;
  subagents?: SubagentSettings;
}

/** What a Task call needs from its parent run to start a child (docs/protocol/cursor-tools.md §5.11). */
export interface SubagentSettings {
  /** The model the parent runs on: `inherit` resolves to it. */
  parentModelId: string;
  /** The run request's conversation_group_id: the children's root parent conversation. */
  conversationGroupId: string | undefined;
  modelOverrides: readonly SubagentModelOverride[];
}

/** The `message` oneof of an ExecServerMessage, without id / exec_id (the machine assigns those). */
export type ExecRequest = ExecServerMessage["message"];

/** The `query` oneof of an InteractionQuery, without its id (the machine assigns it). */
export type InteractionRequest = InteractionQuery["query"];
/** The `result` oneof of the client's InteractionResponse. */
export type InteractionAnswer = InteractionResponse["result"];

/** What the call produced when it ended: one value holds both views (docs/protocol/cursor-tools.md §2.5). */
export interface ToolCompletion {
  /** Canonical string result for the model and the store (docs/protocol/cursor-run.md §8.4). */
  content: string;
  isError: boolean;
  /** The typed ToolCall for tool_call_completed: args + typed result (timestamps are set by the machine). */
  toolCall: ToolCall;
  /** A file the client successfully read: the checkpoint's read_paths grows with it (docs/protocol/cursor-run.md §11).
   * */
  readPath?: string;
}

/** One step of a driver. `state` is the driver's own, threaded back into the next call. */
export type DriverStep<S> =
  | { kind: "exec"; request: ExecRequest; state: S }
  /** Ask the user through the client (docs/protocol/cursor-tools.md §1.1): an interaction_query. */
  | { kind: "query"; query: InteractionRequest; state: S }
  | { kind: "delta"; delta: ToolCallDelta; state: S }
  | { kind: "wait"; state: S }
  | { kind: "complete"; completion: ToolCompletion; state: S }
  | { kind: "protocol_error"; message: string };

/** Live projection of argument text while the model is still generating it (Write/StrReplace,
 * docs/protocol/cursor-tools.md §5.6). */
export interface ArgsStreamer {
  /** Feed a raw JSON text delta; returns the UI updates it makes possible now. */
  push(jsonDelta: string): Array<{ kind: "delta"; delta: ToolCallDelta } | { kind: "partial"; toolCall: ToolCall }>;
}

export interface ToolDriver<S = unknown> {
  /** Model-visible tool name, e.g. "Read". */
  readonly name: string;
  /** Typed but empty ToolCall branch for the first partial_tool_call (placeholder card). */
  placeholder(callId: string): ToolCall;
  /** Optional live args projection (only edit tools have one). */
  argsStreamer?(callId: string): ArgsStreamer;
  /** Validates args; returns the ToolCall with args for tool_call_started, or an error for the model. */
  started(call: ToolInvocation, ctx: ToolContext): { toolCall: ToolCall } | { invalid: string };
  /** First step after tool_call_started (normally the first Exec). */
  begin(call: ToolInvocation, ctx: ToolContext): DriverStep<S>;
  /** A client Exec message for the exec this driver asked for last (message oneof already set). */
  onExecMessage(call: ToolInvocation, state: S, message: ExecClientMessage["message"]): DriverStep<S>;
  /** The client's interaction_response to the query this driver sent last (tools that ask the user only). */
  onInteractionResponse?(call: ToolInvocation, state: S, answer: InteractionAnswer): DriverStep<S>;
}
