// What the Connect handlers need from the agent side (engine/agent-service.ts implements it): transport stays
// framing and routing, and the engine depends on transport, never the other way round.
import type { AgentClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import type { EndStream } from "../cursor/errors.js";

/** Who serves a request: the gateway's own loop, or the upstream it is relayed to unchanged. */
export type RunRoute = "local" | "upstream";

export interface StreamSink {
  /** One encoded AgentServerMessage (its protobuf payload, without the Connect envelope). */
  frame(payload: Uint8Array): void;
  heartbeat(): void;
  end(end: EndStream): void;
  /** The request's run went to the upstream after this subscriber came (RunSSE before the run_request). */
  handOver(): void;
}

/** A client message admitted before its run_request, at its append_seqno. */
export interface HeldAppend {
  seqno: bigint;
  message: AgentClientMessage;
}

/**
 * The headers a subagent's requests carry (docs/protocol/cursor-run.md §13): the parent's request_id and the
 * parent's Task tool call. Either may come alone.
 */
export interface ParentLink {
  requestId?: string;
  toolCallId?: string;
}

const PARENT_REQUEST_HEADER = "x-parent-request-id";
const PARENT_TOOL_CALL_HEADER = "x-parent-agent-tool-call-id";

/** The parent headers of one HTTP request, undefined when it has neither. */
export function parentLinkOf(header: (name: string) => string): ParentLink | undefined {
  const requestId = header(PARENT_REQUEST_HEADER);
  const toolCallId = header(PARENT_TOOL_CALL_HEADER);
  if (!requestId && !toolCallId) return undefined;
  return { ...(requestId ? { requestId } : {}), ...(toolCallId ? { toolCallId } : {}) };
}

export interface AgentBackend {
  routeOf(requestId: string): RunRoute;
  /** Attaches a RunSSE subscriber; the returned function detaches it. */
  subscribe(requestId: string, sink: StreamSink): () => void;
  /** Admits one client message; a run_request naming no model may need the store to be routed, hence a promise.
   * `parent` is what the request's parent headers said; a value that changes on one request is a protocol error. */
  append(
    requestId: string,
    seqno: bigint,
    message: AgentClientMessage,
    parent?: ParentLink,
  ): RunRoute | Promise<RunRoute>;
  /**
   * The appends that waited for a run_request which then went upstream, in append_seqno order, for the caller to
   * relay after it (docs/protocol/cursor-transport.md §6.1); each is handed out once.
   */
  takeEarlyAppends(requestId: string): HeldAppend[];
  /** The client broke the protocol on a stream the handler already ended: the request's run is canceled. */
  cancel(requestId: string, reason: string): void;
}
