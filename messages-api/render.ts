// Renders one model call's ModelEvents as the Anthropic Messages stream: message_start, then each content block as
// content_block_start / _delta / _stop with consecutive indexes, then message_delta (stop_reason, usage) and
// message_stop. Blocks never overlap: a tool call starting while another block is open is sent whole at its end.
import type { DoneReason, ModelEvent, Usage } from "../providers/types.js";
import type { SignatureCodec } from "./signature.js";

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "stop_sequence";

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export type ContentBlockStart =
  | { type: "text"; text: "" }
  | { type: "thinking"; thinking: ""; signature: "" }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, never> };

export type BlockDelta =
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; thinking: string }
  | { type: "signature_delta"; signature: string }
  | { type: "input_json_delta"; partial_json: string };

export type StreamEvent =
  | {
      type: "message_start";
      message: {
        id: string;
        type: "message";
        role: "assistant";
        model: string;
        content: [];
        stop_reason: null;
        stop_sequence: null;
        usage: AnthropicUsage;
      };
    }
  | { type: "content_block_start"; index: number; content_block: ContentBlockStart }
  | { type: "content_block_delta"; index: number; delta: BlockDelta }
  | { type: "content_block_stop"; index: number }
  | {
      type: "message_delta";
      delta: { stop_reason: StopReason; stop_sequence: string | null };
      usage: AnthropicUsage;
    }
  | { type: "message_stop" };

const STOP_REASONS: Record<DoneReason, StopReason> = { stop: "end_turn", toolUse: "tool_use", length: "max_tokens" };

interface ToolBlock {
  id: string;
  name: string;
  /** The block index when it streams live; undefined while it waits to be sent whole. */
  index?: number;
  sent: string;
}

export class MessageRenderer {
  private nextIndex = 0;
  private open: "text" | "thinking" | "tool" | undefined;
  private readonly tools = new Map<number, ToolBlock>();
  private usage: AnthropicUsage = { input_tokens: 0, output_tokens: 0 };

  constructor(
    private readonly messageId: string,
    private readonly model: string,
    private readonly codec: SignatureCodec,
  ) {}

  start(): StreamEvent {
    return {
      type: "message_start",
      message: {
        id: this.messageId,
        type: "message",
        role: "assistant",
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    };
  }

  accept(event: ModelEvent): StreamEvent[] {
    switch (event.type) {
      case "start":
        return [];
      case "text_start":
        return this.startBlock("text", { type: "text", text: "" });
      case "thinking_start":
        return this.startBlock("thinking", { type: "thinking", thinking: "", signature: "" });
      case "text_delta":
        return [this.delta({ type: "text_delta", text: event.delta })];
      case "thinking_delta":
        return [this.delta({ type: "thinking_delta", thinking: event.delta })];
      case "text_end":
        return this.stopBlock();
      case "thinking_end":
        return [this.delta({ type: "signature_delta", signature: this.codec.signDisplay() }), ...this.stopBlock()];
      case "toolcall_start":
        return this.startTool(event.index, event.id, event.name);
      case "toolcall_delta":
        return this.toolDelta(event.index, event.delta);
      case "toolcall_end":
        return this.endTool(event.index, event.argumentsJson);
      case "usage":
        this.usage = anthropicUsage(event.usage);
        return [];
      case "done":
        return this.finish(event);
    }
  }

  private startBlock(kind: "text" | "thinking" | "tool", block: ContentBlockStart): StreamEvent[] {
    this.open = kind;
    return [{ type: "content_block_start", index: this.nextIndex, content_block: block }];
  }

  private delta(delta: BlockDelta, index = this.nextIndex): StreamEvent {
    return { type: "content_block_delta", index, delta };
  }

  private stopBlock(): StreamEvent[] {
    this.open = undefined;
    return [{ type: "content_block_stop", index: this.nextIndex++ }];
  }

  private startTool(callIndex: number, id: string, name: string): StreamEvent[] {
    const live = this.open === undefined;
    this.tools.set(callIndex, { id, name, sent: "", ...(live ? { index: this.nextIndex } : {}) });
    return live ? this.startBlock("tool", { type: "tool_use", id, name, input: {} }) : [];
  }

  private toolDelta(callIndex: number, fragment: string): StreamEvent[] {
    const tool = this.tools.get(callIndex);
    if (tool?.index === undefined) return [];
    tool.sent += fragment;
    return [this.delta({ type: "input_json_delta", partial_json: fragment }, tool.index)];
  }

  /** The finished arguments are authoritative: whatever of them was not streamed yet goes out now. */
  private endTool(callIndex: number, argumentsJson: string): StreamEvent[] {
    const tool = this.tools.get(callIndex);
    if (tool === undefined) return [];
    const opening =
      tool.index === undefined
        ? this.startBlock("tool", { type: "tool_use", id: tool.id, name: tool.name, input: {} })
        : [];
    if (!argumentsJson.startsWith(tool.sent)) {
      throw new Error(`tool call ${tool.id} arguments contradict their streamed deltas`);
    }
    const rest = argumentsJson.slice(tool.sent.length);
    return [
      ...opening,
      ...(rest === "" ? [] : [this.delta({ type: "input_json_delta", partial_json: rest })]),
      ...this.stopBlock(),
    ];
  }

  /** The endpoint's replay state rides in a signed redacted_thinking block that Claude Code sends back verbatim. */
  private finish({ reason, replay, stopSequence }: Extract<ModelEvent, { type: "done" }>): StreamEvent[] {
    const carried = replay
      ? [
          ...this.startBlock("thinking", { type: "redacted_thinking", data: this.codec.signReplay(replay) }),
          ...this.stopBlock(),
        ]
      : [];
    return [
      ...carried,
      {
        type: "message_delta",
        // Only an endpoint that names the stop sequence makes it a stop_sequence stop.
        delta:
          stopSequence === undefined
            ? { stop_reason: STOP_REASONS[reason], stop_sequence: null }
            : { stop_reason: "stop_sequence", stop_sequence: stopSequence },
        usage: this.usage,
      },
      { type: "message_stop" },
    ];
  }
}

/** Anthropic's input_tokens excludes cache reads and writes; ours counts the whole prompt. */
export function anthropicUsage(usage: Usage): AnthropicUsage {
  const cacheRead = usage.cacheReadTokens ?? 0;
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage.inputTokens ?? 0) - cacheRead - cacheWrite),
    output_tokens: usage.outputTokens ?? 0,
    ...(usage.cacheReadTokens === undefined ? {} : { cache_read_input_tokens: cacheRead }),
    ...(usage.cacheWriteTokens === undefined ? {} : { cache_creation_input_tokens: cacheWrite }),
  };
}
