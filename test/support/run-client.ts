// A Cursor client on the HTTP/2 `Run` bidi stream, built on the stock connect-node client: it sends the
// run_request, answers KV and Exec requests on the same stream (the workspace's honest answers) and records every
// server message and the final status.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { type CallOptions, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, type Http2SessionManager } from "@connectrpc/connect-node";
import {
  AgentClientMessageSchema,
  AgentService,
  type AgentClientMessage,
  type AgentServerMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { answerExec, createWorkspace, unscriptedShell, type Workspace } from "./client-workspace.js";
import { blobHex } from "./observed-frames.js";

type Init = MessageInitShape<typeof AgentClientMessageSchema>;

export const RUN_PATH = "/agent.v1.AgentService/Run";

/** A run_request with a user message for `modelId`, on a new conversation unless one is given. */
export function runRequest(modelId: string, text = "what is in src/a.txt?", conversationId: string = randomUUID()) {
  return {
    message: {
      case: "runRequest" as const,
      value: {
        conversationId,
        requestedModel: { modelId },
        action: {
          action: { case: "userMessageAction" as const, value: { userMessage: { text, messageId: randomUUID() } } },
        },
      },
    },
  };
}

export interface RunCallResult {
  messages: AgentServerMessage[];
  /** undefined on success; the Connect error of the end-stream frame otherwise. */
  error: ConnectError | undefined;
  /** Kinds in order, heartbeats left out: interaction updates by their branch, others by theirs. */
  kinds: string[];
}

/** A queue the request side reads from; `close()` half-closes the request stream. */
export class Outbox implements AsyncIterable<AgentClientMessage> {
  private readonly queued: AgentClientMessage[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  push(init: Init): void {
    this.queued.push(create(AgentClientMessageSchema, init));
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<AgentClientMessage> {
    for (;;) {
      const next = this.queued.shift();
      if (next) yield next;
      else if (this.closed) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

export function runClient(
  baseUrl: string,
  opts: { ca?: Buffer; sessionManager?: Http2SessionManager; sendCompression?: boolean } = {},
) {
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "2",
    ...(opts.ca ? { nodeOptions: { ca: opts.ca } } : {}),
    ...(opts.sessionManager ? { sessionManager: opts.sessionManager } : {}),
  });
  return createClient(AgentService, transport);
}

/**
 * Runs one call: `first` messages go out at once, then the client answers what the server asks until the
 * stream ends. The request side stays open until the response ends, as Cursor's does, unless `halfClose`.
 */
export async function driveRun(
  client: ReturnType<typeof runClient>,
  first: Init[],
  opts: { workspace?: Workspace; call?: CallOptions; halfClose?: boolean } = {},
): Promise<RunCallResult> {
  const outbox = new Outbox();
  for (const m of first) outbox.push(m);
  // A peer that answers only once the request ended (the fake upstream) gets the request side closed at once.
  if (opts.halfClose) outbox.close();
  const workspace = opts.workspace ?? createWorkspace();
  const blobs = new Map<string, Uint8Array>();
  const messages: AgentServerMessage[] = [];
  let error: ConnectError | undefined;
  try {
    for await (const message of client.run(outbox, opts.call)) {
      messages.push(message);
      answer(message, outbox, blobs, workspace);
    }
  } catch (e) {
    error = ConnectError.from(e);
  } finally {
    outbox.close();
  }
  return { messages, error, kinds: messages.map(kindOf).filter((k) => k !== "heartbeat") };
}

function answer(message: AgentServerMessage, outbox: Outbox, blobs: Map<string, Uint8Array>, ws: Workspace): void {
  const m = message.message;
  if (m.case === "kvServerMessage") {
    const kv = m.value.message;
    if (kv.case === "setBlobArgs") {
      blobs.set(blobHex(kv.value.blobId), kv.value.blobData);
      outbox.push({
        message: { case: "kvClientMessage", value: { id: m.value.id, message: { case: "setBlobResult", value: {} } } },
      });
    } else if (kv.case === "getBlobArgs") {
      const blobData = blobs.get(blobHex(kv.value.blobId));
      outbox.push({
        message: {
          case: "kvClientMessage",
          value: { id: m.value.id, message: { case: "getBlobResult", value: { blobData } } },
        },
      });
    }
  } else if (m.case === "execServerMessage") {
    const id = m.value.id;
    for (const step of answerExec(m.value, ws, unscriptedShell)?.messages ?? [])
      outbox.push({ message: { case: "execClientMessage", value: { id, message: step.message } } });
    outbox.push({
      message: { case: "execClientControlMessage", value: { message: { case: "streamClose", value: { id } } } },
    });
  }
}

function kindOf(message: AgentServerMessage): string {
  const m = message.message;
  if (m.case === "interactionUpdate") return m.value.message.case ?? "empty";
  if (m.case === "kvServerMessage") return m.value.message.case === "setBlobArgs" ? "kv_set" : "kv_get";
  if (m.case === "execServerMessage") return `exec:${m.value.message.case}`;
  if (m.case === "conversationCheckpointUpdate") return "checkpoint";
  return String(m.case);
}
