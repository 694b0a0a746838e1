// The run-start request a scripted Cursor client sends first: the RunStart options a test passes to startRun, the
// AgentRunRequest built from them (user message or resume action, default request context from the workspace,
// credentials and model), and the small wrapper that turns a client message body into an AgentClientMessage.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import {
  type AgentClientMessage,
  AgentClientMessageSchema,
  AgentMode,
  type AgentRunRequest,
  AgentRunRequestSchema,
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  type RequestContextSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ClientMessageInit, RunHooks } from "./client-responder.js";
import type { Workspace } from "./client-workspace.js";

export interface RunStart {
  conversationId: string;
  requestId?: string;
  modelId: string;
  text?: string;
  /** Send resume_action instead of user_message_action (docs/protocol/cursor-run.md §11: recovery after a broken
   * stream). */
  resume?: boolean;
  checkpoint?: ConversationStateStructure;
  credentials?: { apiKey: string; baseUrl?: string };
  /** Default true: RunSSE is opened (and its headers awaited, up to 1 s) before the run_request append. */
  runSseFirst?: boolean;
  /** The run_request's append_seqno (default 1): later when the test appended something before it. */
  firstSeqno?: bigint;
  mode?: AgentMode;
  requestContext?: MessageInitShape<typeof RequestContextSchema>;
  /** Extra HTTP headers on every RunSSE and BidiAppend of the run (a subagent's parent headers). */
  headers?: Record<string, string>;
  /** Last-minute edits to the run request for fields this helper does not expose. */
  customize?(runRequest: AgentRunRequest): void;
  hooks?: RunHooks;
}

export function buildRunRequest(start: RunStart, workspace: Workspace): AgentRunRequest {
  const credentials = start.credentials
    ? {
        case: "apiKeyCredentials" as const,
        value: { apiKey: start.credentials.apiKey, baseUrl: start.credentials.baseUrl },
      }
    : undefined;
  const requestContext = start.requestContext ?? {
    env: {
      osVersion: "linux 6.1.0",
      workspacePaths: [workspace.root],
      shell: "/bin/bash",
      timeZone: "UTC",
      projectFolder: workspace.root,
      terminalsFolder: `${workspace.root}/.terminals`,
    },
  };
  const userMessage = { text: start.text ?? "", messageId: randomUUID(), mode: start.mode ?? AgentMode.AGENT };
  return create(AgentRunRequestSchema, {
    conversationId: start.conversationId,
    conversationState: start.checkpoint ?? create(ConversationStateStructureSchema),
    action: {
      action: start.resume
        ? { case: "resumeAction", value: { requestContext } }
        : { case: "userMessageAction", value: { userMessage, requestContext } },
    },
    modelDetails: { modelId: start.modelId },
    requestedModel: { modelId: start.modelId, credentials },
  });
}

export function clientMessage(message: ClientMessageInit): AgentClientMessage {
  return create(AgentClientMessageSchema, { message });
}
