// WorkerEvent → AEP server events for the content of one turn (docs/protocol/aep.md kinds). Pure: the turn machine
// keeps the returned state in its context. Streaming is per block: message.start on the block's first delta,
// message.delta per delta, then message.end and the full `message` (which lets a client that lost deltas re-render,
// done.dropped).
import type { FileDiff, ToolDisplay, WorkerEvent } from "../../workers/types.js";
import {
  type ErrorCode,
  type FileDiffData,
  isErrorCode,
  type Question,
  type ServerEvent,
  type ToolCallDisplay,
} from "./envelope.js";

export interface MappingState {
  /** Text blocks with a message.start and no message.end yet. */
  readonly openText: readonly string[];
  /** Reasoning blocks already streamed delta by delta (their completion adds nothing). */
  readonly streamedReasoning: readonly string[];
}

export const initialMapping: MappingState = { openText: [], streamedReasoning: [] };

export type ContentEvent = Extract<
  WorkerEvent,
  {
    type:
      | "text.delta"
      | "text.completed"
      | "reasoning.delta"
      | "reasoning.completed"
      | "tool.called"
      | "tool.updated"
      | "tool.result"
      | "plan.updated"
      | "mode.updated"
      | "step"
      | "raw"
      | "context.usage"
      | "mcp.status";
  }
>;

/** The reports a worker_command answers with: they may go out outside any turn. */
export function isReport(
  event: WorkerEvent,
): event is Extract<ContentEvent, { type: "context.usage" | "mcp.status" | "raw" }> {
  return event.type === "context.usage" || event.type === "mcp.status" || event.type === "raw";
}

export function mapContent(state: MappingState, event: ContentEvent): { state: MappingState; events: ServerEvent[] } {
  switch (event.type) {
    case "text.delta": {
      const open = state.openText.includes(event.blockId);
      const delta: ServerEvent = { type: "message.delta", data: { message_id: event.blockId, content: event.text } };
      if (open) return { state, events: [delta] };
      return {
        state: { ...state, openText: [...state.openText, event.blockId] },
        events: [messageStart(event.blockId), delta],
      };
    }
    case "text.completed": {
      const open = state.openText.includes(event.blockId);
      const message: ServerEvent = {
        type: "message",
        data: { id: event.blockId, role: "assistant", content: event.text, content_type: "text" },
      };
      // A block that never streamed (no partial messages) still opens and closes, so every text has the same shape.
      // A block the worker retracted (its call was retried) is closed but never offered as the answer.
      if (event.abandoned)
        return {
          state: { ...state, openText: state.openText.filter((id) => id !== event.blockId) },
          events: open ? [{ type: "message.end", data: { message_id: event.blockId } }] : [],
        };
      const events: ServerEvent[] = [
        ...(open ? [] : [messageStart(event.blockId)]),
        { type: "message.end", data: { message_id: event.blockId } },
        message,
      ];
      return { state: { ...state, openText: state.openText.filter((id) => id !== event.blockId) }, events };
    }
    case "reasoning.delta": {
      const streamed = state.streamedReasoning.includes(event.blockId)
        ? state.streamedReasoning
        : [...state.streamedReasoning, event.blockId];
      return {
        state: { ...state, streamedReasoning: streamed },
        events: [{ type: "reasoning", data: { id: event.blockId, content: event.text } }],
      };
    }
    case "reasoning.completed":
      if (event.abandoned || state.streamedReasoning.includes(event.blockId))
        return {
          state: { ...state, streamedReasoning: state.streamedReasoning.filter((id) => id !== event.blockId) },
          events: [],
        };
      return { state, events: [{ type: "reasoning", data: { id: event.blockId, content: event.text } }] };
    case "tool.called":
      return {
        state,
        events: [
          {
            type: "tool_call",
            data: { id: event.id, name: event.name, input: asRecord(event.input), ...toolDisplay(event) },
          },
        ],
      };
    case "tool.updated":
      return {
        state,
        events: [
          {
            type: "tool_update",
            data: {
              id: event.id,
              status: event.status,
              ...(event.content !== undefined ? { content: event.content } : {}),
              ...(event.diff ? { diff: diffData(event.diff) } : {}),
            },
          },
        ],
      };
    case "tool.result":
      return {
        state,
        events: [
          {
            type: "tool_result",
            data: {
              id: event.id,
              output: event.output,
              ...(event.isError ? { error: event.output } : {}),
              status: event.isError ? "failed" : "completed",
              ...(event.diff ? { diff: diffData(event.diff) } : {}),
            },
          },
        ],
      };
    case "plan.updated":
      return { state, events: [{ type: "plan", data: { items: event.entries.map((e) => ({ ...e })) } }] };
    case "mode.updated":
      return { state, events: [{ type: "mode_update", data: { mode: event.mode } }] };
    case "step":
      return {
        state,
        events: [
          {
            type: "step",
            data: {
              id: `step_${event.name}`,
              step_type: event.name,
              name: event.name,
              ...(event.detail ? { output: event.detail } : {}),
            },
          },
        ],
      };
    case "raw":
      return { state, events: [{ type: "raw", data: { kind: rawKind(event.frame), raw: event.frame } }] };
    case "context.usage":
      return { state, events: [{ type: "context_usage", data: event.detail }] };
    case "mcp.status":
      return { state, events: [{ type: "mcp_status", data: { servers: event.servers.map(serverInfo) } }] };
  }
}

/** Blocks still open when the turn ends are closed, so no message.start is left without its message.end. */
export function closeOpenMessages(state: MappingState): ServerEvent[] {
  return state.openText.map((id): ServerEvent => ({ type: "message.end", data: { message_id: id } }));
}

export function interactionRequest(event: Extract<WorkerEvent, { type: "interaction.requested" }>): ServerEvent {
  const p = event.payload;
  if (event.kind === "question") {
    return {
      type: "question_request",
      data: {
        id: event.id,
        ...(str(p.tool_name) ? { tool_name: str(p.tool_name) } : {}),
        questions: questionsOf(p.questions),
      },
    };
  }
  if (event.kind === "elicitation") {
    return {
      type: "elicitation_request",
      data: {
        id: event.id,
        mcp_server_name: str(p.mcp_server_name) ?? "",
        message: str(p.message) ?? "",
        ...optional({ mode: str(p.mode), url: str(p.url), elicitation_id: str(p.elicitation_id) }),
        ...(isRecord(p.requested_schema) ? { requested_schema: p.requested_schema } : {}),
      },
    };
  }
  const toolName = str(p.tool_name) ?? "unknown";
  const input = p.input ?? {};
  return {
    type: "permission_request",
    data: {
      id: event.id,
      tool_name: toolName,
      description: str(p.description) ?? str(p.display_name) ?? toolName,
      args: [JSON.stringify(input)],
      input_raw: input,
    },
  };
}

/** A worker-side error code when it is one of the seed's, else the generic one. */
export function errorCodeOf(code: string | undefined, fallback: ErrorCode = "INTERNAL_ERROR"): ErrorCode {
  return code !== undefined && isErrorCode(code) ? code : fallback;
}

/** Only the fields the worker gave: Claude Code's tool calls carry none of them. */
function toolDisplay(event: ToolDisplay): ToolCallDisplay {
  return {
    ...optional({ title: event.title, kind: event.kind }),
    ...(event.locations ? { locations: event.locations.map((l) => ({ ...l })) } : {}),
  };
}

const diffData = (diff: FileDiff): FileDiffData => ({
  path: diff.path,
  old_text: diff.oldText ?? "",
  new_text: diff.newText,
});

const messageStart = (id: string): ServerEvent => ({
  type: "message.start",
  data: { id, role: "assistant", content_type: "text" },
});

function questionsOf(value: unknown): Question[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((q) => ({
    question: str(q.question) ?? "",
    header: str(q.header) ?? "",
    options: (Array.isArray(q.options) ? q.options : []).filter(isRecord).map((o) => ({
      label: str(o.label) ?? "",
      ...optional({ description: str(o.description), preview: str(o.preview) }),
    })),
    multi_select: q.multiSelect === true || q.multi_select === true,
  }));
}

function serverInfo(value: unknown): { name: string; status: string } {
  const r = isRecord(value) ? value : {};
  return { name: str(r.name) ?? "", status: str(r.status) ?? "unknown" };
}

function rawKind(frame: unknown): string {
  if (!isRecord(frame)) return "unknown";
  const type = str(frame.type) ?? "unknown";
  return str(frame.subtype) ? `${type}/${str(frame.subtype)}` : type;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const asRecord = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : { value: v });
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const optional = <T extends Record<string, string | undefined>>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
