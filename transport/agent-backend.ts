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

export interface AgentBackend {
  routeOf(requestId: string): RunRoute;
  /** Attaches a RunSSE subscriber; the returned function detaches it. */
  subscribe(requestId: string, sink: StreamSink): () => void;
  /** Admits one client message; a run_request naming no model may need the store to be routed, hence a promise. */
  append(requestId: string, seqno: bigint, message: AgentClientMessage): RunRoute | Promise<RunRoute>;
  /**
   * The appends that waited for a run_request which then went upstream, in append_seqno order, for the caller to
   * relay after it (docs/protocol/cursor-transport.md §6.1); each is handed out once.
   */
  takeEarlyAppends(requestId: string): HeldAppend[];
  /** The client broke the protocol on a stream the handler already ended: the request's run is canceled. */
  cancel(requestId: string, reason: string): void;
}
