// ACP `session/update` notifications of one prompt turn → WorkerEvents (the mapping table in workers/README.md).
// ACP streams text and thoughts as chunks with no block boundaries, so a block is the run of chunks of one kind (and
// one messageId, when the agent gives one); any other update closes it. Every buffer is bounded.
import type * as acp from "@agentclientprotocol/sdk";
import type { FileDiff, FileLocation, ToolDisplay, WorkerEvent } from "../types.js";

export interface MapperLimits {
  /** The full text kept per message block (for the final `message`); deltas beyond it still stream. */
  readonly maxBlockChars: number;
  /** One tool's output as reported in `tool.result`. */
  readonly maxToolOutputChars: number;
  /** Tool calls remembered per turn (a result for a forgotten one still maps, without its call). */
  readonly maxToolsPerTurn: number;
}

interface OpenBlock {
  readonly kind: "text" | "reasoning";
  readonly id: string;
  readonly messageId: string | undefined;
  text: string;
}

export class AcpTurnMapper {
  private block: OpenBlock | undefined;
  private blocks = 0;
  private readonly tools = new Set<string>();

  /** `turnKey` makes block ids unique across turns (the input id). */
  constructor(
    private readonly turnKey: string,
    private readonly limits: MapperLimits,
  ) {}

  map(update: acp.SessionUpdate): WorkerEvent[] {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        return this.chunk("text", update);
      case "agent_thought_chunk":
        return this.chunk("reasoning", update);
      case "tool_call":
        return [...this.closeBlock(), ...this.toolCall(update)];
      case "tool_call_update":
        return [...this.closeBlock(), ...this.toolUpdate(update)];
      case "plan":
        return [
          ...this.closeBlock(),
          {
            type: "plan.updated",
            entries: update.entries.map((e) => ({ content: e.content, priority: e.priority, status: e.status })),
          },
        ];
      case "current_mode_update":
        return [...this.closeBlock(), { type: "mode.updated", mode: update.currentModeId }];
      case "usage_update":
        return [{ type: "context.usage", detail: contextUsage(update.used, update.size) }];
      default:
        // user_message_chunk (a replayed prompt), available commands, config options, session info, notices…
        return [{ type: "raw", frame: update }];
    }
  }

  /** The turn ended: the block still open is complete. */
  finish(): WorkerEvent[] {
    return this.closeBlock();
  }

  private chunk(kind: OpenBlock["kind"], update: acp.ContentChunk): WorkerEvent[] {
    if (update.content.type !== "text") return [...this.closeBlock(), { type: "raw", frame: update }];
    const messageId = update.messageId ?? undefined;
    const open = this.block;
    const events: WorkerEvent[] = [];
    if (!open || open.kind !== kind || open.messageId !== messageId) {
      events.push(...this.closeBlock());
      this.blocks += 1;
      this.block = { kind, id: `${this.turnKey}:${this.blocks}`, messageId, text: "" };
    }
    const block = this.block!;
    const text = update.content.text;
    block.text = (block.text + text).slice(0, this.limits.maxBlockChars);
    events.push({ type: kind === "text" ? "text.delta" : "reasoning.delta", blockId: block.id, text });
    return events;
  }

  private closeBlock(): WorkerEvent[] {
    const block = this.block;
    if (!block) return [];
    this.block = undefined;
    const type = block.kind === "text" ? "text.completed" : "reasoning.completed";
    return [{ type, blockId: block.id, text: block.text }];
  }

  private toolCall(call: acp.ToolCall): WorkerEvent[] {
    // A call already shown (its permission request carried it) is updated, not announced twice.
    if (this.tools.has(call.toolCallId)) return this.toolUpdate(call);
    const events: WorkerEvent[] = [this.called(call.toolCallId, call)];
    if (call.status === "completed" || call.status === "failed") events.push(this.result(call.toolCallId, call));
    return events;
  }

  private toolUpdate(update: acp.ToolCallUpdate): WorkerEvent[] {
    // An update for a call never announced (a permission request carried it) still gets its tool_call first.
    const events: WorkerEvent[] = this.tools.has(update.toolCallId) ? [] : [this.called(update.toolCallId, update)];
    if (update.status === "completed" || update.status === "failed") {
      this.tools.delete(update.toolCallId);
      return [...events, this.result(update.toolCallId, update)];
    }
    const diff = firstDiff(update.content);
    const content = update.content ? { content: update.content } : {};
    return [
      ...events,
      {
        type: "tool.updated",
        id: update.toolCallId,
        status: update.status ?? "in_progress",
        ...content,
        ...(diff ? { diff } : {}),
        ...display(update),
      },
    ];
  }

  private called(id: string, call: acp.ToolCall | acp.ToolCallUpdate): WorkerEvent {
    if (this.tools.size < this.limits.maxToolsPerTurn) this.tools.add(id);
    return { type: "tool.called", id, name: call.kind ?? "other", input: call.rawInput ?? {}, ...display(call) };
  }

  private result(id: string, call: acp.ToolCall | acp.ToolCallUpdate): WorkerEvent {
    const diff = firstDiff(call.content);
    const output = toolOutput(call).slice(0, this.limits.maxToolOutputChars);
    return { type: "tool.result", id, output, isError: call.status === "failed", ...(diff ? { diff } : {}) };
  }
}

function display(call: acp.ToolCall | acp.ToolCallUpdate): ToolDisplay {
  const locations: FileLocation[] | undefined = call.locations?.map((l) =>
    typeof l.line === "number" ? { path: l.path, line: l.line } : { path: l.path },
  );
  return {
    ...(call.title ? { title: call.title } : {}),
    ...(call.kind ? { kind: call.kind } : {}),
    ...(locations?.length ? { locations } : {}),
  };
}

/** AEP's tool_result carries one diff: the first the tool reported. */
function firstDiff(content: acp.ToolCallContent[] | null | undefined): FileDiff | undefined {
  const diff = content?.find((c) => c.type === "diff");
  if (diff?.type !== "diff") return undefined;
  return {
    path: diff.path,
    ...(typeof diff.oldText === "string" ? { oldText: diff.oldText } : {}),
    newText: diff.newText,
  };
}

/** The tool's text content, else its raw output (the agent's own record of it) as text. */
function toolOutput(call: acp.ToolCall | acp.ToolCallUpdate): string {
  const texts = (call.content ?? []).flatMap((c) =>
    c.type === "content" && c.content.type === "text" ? [c.content.text] : [],
  );
  if (texts.length > 0) return texts.join("\n");
  const raw = call.rawOutput;
  if (raw === undefined || raw === null) return "";
  if (typeof raw === "string") return raw;
  const record = raw as Record<string, unknown>;
  // Codex's exec records carry the output the model saw; otherwise the whole record.
  for (const key of ["formatted_output", "aggregated_output", "output"])
    if (typeof record[key] === "string") return record[key];
  return JSON.stringify(raw);
}

function contextUsage(used: number, size: number): Record<string, unknown> {
  return { total_tokens: used, max_tokens: size, percentage: size > 0 ? Math.round((used / size) * 100) : 0 };
}
