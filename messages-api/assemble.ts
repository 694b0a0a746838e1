// The non-streaming answer: the rendered stream folded into one Message object, so both forms of the endpoint
// come from the same renderer.
import type { AnthropicUsage, StopReason, StreamEvent } from "./render.js";

type Block =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: unknown; partialJson: string };

export interface AssembledMessage {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: unknown[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

export class MessageAssembler {
  private message: AssembledMessage | undefined;
  private readonly blocks: Block[] = [];

  accept(event: StreamEvent): void {
    switch (event.type) {
      case "message_start":
        this.message = { ...event.message, content: [] };
        return;
      case "content_block_start":
        this.blocks[event.index] = { ...event.content_block, ...toolStart(event.content_block) } as Block;
        return;
      case "content_block_delta":
        appendDelta(this.blocks[event.index]!, event.delta);
        return;
      case "content_block_stop":
        return;
      case "message_delta":
        if (this.message) Object.assign(this.message, { ...event.delta, usage: event.usage });
        return;
      case "message_stop":
        return;
    }
  }

  result(): AssembledMessage {
    if (!this.message) throw new Error("no message_start was rendered");
    return { ...this.message, content: this.blocks.map(finishBlock) };
  }
}

function toolStart(block: { type: string }): object {
  return block.type === "tool_use" ? { partialJson: "" } : {};
}

function appendDelta(block: Block, delta: Extract<StreamEvent, { type: "content_block_delta" }>["delta"]): void {
  if (delta.type === "text_delta" && block.type === "text") block.text += delta.text;
  else if (delta.type === "thinking_delta" && block.type === "thinking") block.thinking += delta.thinking;
  else if (delta.type === "signature_delta" && block.type === "thinking") block.signature = delta.signature;
  else if (delta.type === "input_json_delta" && block.type === "tool_use") block.partialJson += delta.partial_json;
}

function finishBlock(block: Block): unknown {
  if (block.type !== "tool_use") return block;
  const { partialJson, ...rest } = block;
  return { ...rest, input: JSON.parse(partialJson === "" ? "{}" : partialJson) };
}
