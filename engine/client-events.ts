// A client message admitted to a request stream, as the event its run understands (docs/protocol/cursor-transport.md
// §5); messages that change no run state map to nothing.
import type { AgentClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import type { RunEvent } from "../machines/run.js";

export function toRunEvent(message: AgentClientMessage): RunEvent | undefined {
  const m = message.message;
  switch (m.case) {
    case "execClientMessage":
      return { type: "CLIENT_EXEC", id: m.value.id, message: m.value.message };
    case "execClientControlMessage": {
      const c = m.value.message;
      if (c.case === "streamClose") return { type: "CLIENT_STREAM_CLOSE", id: c.value.id };
      if (c.case === "throw") return { type: "CLIENT_THROW", id: c.value.id, error: c.value.error };
      return undefined; // exec heartbeat: liveness only
    }
    case "interactionResponse":
      return { type: "CLIENT_INTERACTION", id: m.value.id, answer: m.value.result };
    case "kvClientMessage": {
      const k = m.value.message;
      if (k.case === "setBlobResult") {
        const error = k.value.error;
        return {
          type: "KV_SET_RESULT",
          id: m.value.id,
          ...(error ? { error: error.message || "unspecified error" } : {}),
        };
      }
      if (k.case === "getBlobResult") return { type: "KV_GET_RESULT", id: m.value.id, data: k.value.blobData };
      return undefined;
    }
    case "conversationAction":
      return m.value.action.case === "cancelAction"
        ? { type: "CANCEL", cause: "client", reason: m.value.action.value.reason || "canceled by the client" }
        : undefined;
    default:
      return undefined; // client_heartbeat, prewarm: nothing to route to a run
  }
}
