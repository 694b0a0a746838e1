// Contract between the tool-agnostic ToolRound / PendingExec machines and the per-tool Cursor codecs
// (docs/protocol/cursor-tools.md §2–§5, §5.5, §5.6; docs/protocol/cursor-tools.md). A driver is pure: it
// takes its own state and a client message and says what happens next. The machines own ids, timing,
// persistence and frame emission; drivers own only the tool's wire shapes.
import type {
  ExecClientMessage,
  McpStateServer,
  ExecServerMessage,
  InteractionQuery,
  InteractionResponse,
  ToolCall,
  SubagentModelOverride,
  ToolCallDelta,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ModeId } from "../../prompt/assets.js";
import type { TodoEntry } from "../derived-state.js";

/** A complete, strictly parsed model tool call. `callId` is opaque and reused byte-for-byte. */
export interface ToolInvocation {
  callId: string;
  modelCallId: string;
  name: string;
  argumentsJson: string;
  /** The result of JSON.parse(argumentsJson); always an object. */
  args: Record<string, unknown>;
}

/** Per-run facts some tools need (Shell: conversation, terminals folder, the admin's command denylist; MCP: the
 * client's tool definitions; Task: the subagent settings). */
export interface ToolContext {
  conversationId: string;
  terminalsFolder?: string;
  adminCommandDenylist?: readonly string[];
  /** The MCP tools the client announced or last listed (cursor/tools/mcp-tools.ts). */
  mcp?: McpCatalog;
  /** The mode the run is in when the round starts (SwitchMode names where it switches from). */
  mode?: ModeId;
  /** Where the round's staged checkpoint left the turn; set for every round's calls (local tools read it). */
  turn?: TurnFacts;
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

/** The turn as the round's staged checkpoint holds it, before any of the round's calls ran. */
export interface TurnFacts {
  /** Steps of the turn before this call's own: earlier rounds, this response's thinking and text, and the calls
   * before it in the batch (docs/protocol/cursor-tools.md §5.12). */
  steps: number;
  /** The to-do list the history folds to (docs/protocol/cursor-run.md §8.9); undefined when none was written. */
  todos?: readonly TodoEntry[];
}

/** The run's MCP definition table (docs/protocol/cursor-tools.md §5.8): by (server, tool) and by model tool name. */
export interface McpCatalog {
  byServerTool: ReadonlyMap<string, McpTool>;
  byModelName: ReadonlyMap<string, McpTool>;
}

/** One MCP tool as the client defined it, with the server it belongs to and the name the model calls it by. */
export interface McpTool {
  server: string;
  modelName: string;
  name: string;
  description: string;
  providerIdentifier: string;
  toolName: string;
  inputSchema: unknown;
}

/** Work the gateway itself does for a tool after the user approved it (WebSearch, GenerateImage): a side effect
 * the engine performs with the configured search or image service (docs/protocol/cursor-tools.md §5.9). */
export type ServiceRequest =
  | { kind: "webSearch"; query: string }
  | { kind: "generateImage"; prompt: string; aspectRatio?: string };

export type ServiceResult =
  | { kind: "webSearch"; references: Array<{ title: string; url: string; chunk: string }> }
  | { kind: "generateImage"; data: Uint8Array; mimeType: string }
  /** Not configured, refused or unreachable: the message is for the model and names no key. */
  | { kind: "error"; message: string };

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
  /** A successful MCP state listing: the run's MCP definition table is refreshed from it. */
  mcpServers?: McpStateServer[];
  /** An approved SwitchMode: the mode the next model call runs in (docs/protocol/cursor-tools.md §6.5). */
  switchMode?: ModeId;
}

/** A committed mode switch as the machines carry it: the mode and the tool names its next model call may use. */
export interface ModeSwitch {
  id: ModeId;
  toolNames: string[];
}

/** How long a driver's pause step lasts: one fixed interval, so a wait is counted in whole pauses. */
export const DRIVER_PAUSE_MS = 500;

/** One step of a driver. `state` is the driver's own, threaded back into the next call. */
export type DriverStep<S> =
  | { kind: "exec"; request: ExecRequest; state: S }
  /** Ask the user through the client (docs/protocol/cursor-tools.md §1.1): an interaction_query. */
  | { kind: "query"; query: InteractionRequest; state: S }
  /** Ask the engine to run an approved service call; its result comes back through onServiceResult. */
  | { kind: "service"; request: ServiceRequest; state: S }
  | { kind: "delta"; delta: ToolCallDelta; state: S }
  | { kind: "wait"; state: S }
  /** Nothing to send for DRIVER_PAUSE_MS, then onResume decides (AwaitShell between two looks at a terminal). */
  | { kind: "pause"; state: S }
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
  /** The result of the service call this driver asked for last (WebSearch, GenerateImage only). */
  onServiceResult?(call: ToolInvocation, state: S, result: ServiceResult): DriverStep<S>;
  /** The pause this driver asked for is over (tools that wait only). */
  onResume?(call: ToolInvocation, state: S): DriverStep<S>;
}
