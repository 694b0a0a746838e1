// Projects an Anthropic Messages request onto the provider layer's ModelRequest, the same vocabulary the Cursor
// path uses. Assistant turns get back the replay state their signed blocks carry (signature.ts); tool results
// become tool messages, which must answer a tool_use of the assistant turn right before them.
import type {
  ModelImage,
  ModelMessage,
  ModelRequest,
  ModelToolCall,
  ReasoningEffort,
  ReplayState,
  ToolChoice,
} from "../providers/types.js";
import { MessagesApiError } from "./errors.js";
import type { ContentBlock, InputMessage, MessagesRequest } from "./schema.js";
import type { SignatureCodec } from "./signature.js";

export interface ProjectionTarget {
  /** The provider's model name. */
  model: string;
  /** The configured ceiling on output tokens, if any. */
  maxOutputTokens?: number;
}

export function projectRequest(
  request: Omit<MessagesRequest, "max_tokens" | "stream"> & { max_tokens?: number },
  target: ProjectionTarget,
  codec: SignatureCodec,
): ModelRequest {
  const maxOutputTokens = minDefined(request.max_tokens, target.maxOutputTokens);
  const reasoningEffort = effortFor(request.thinking);
  return {
    model: target.model,
    system: systemText(request.system, request.messages),
    tools: (request.tools ?? []).map((t) => ({
      name: t.name,
      description: t.description ?? "",
      parameters: t.input_schema,
    })),
    messages: projectMessages(request.messages, codec),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
    ...(reasoningEffort === undefined ? {} : { reasoningEffort }),
    ...(request.tool_choice === undefined ? {} : { toolChoice: toolChoiceFor(request.tool_choice) }),
    ...(request.stop_sequences?.length ? { stopSequences: request.stop_sequences } : {}),
  };
}

function toolChoiceFor(choice: NonNullable<MessagesRequest["tool_choice"]>): ToolChoice {
  if (choice.type === "tool") return { name: choice.name };
  return choice.type === "any" ? "required" : choice.type;
}

/**
 * The system prompt, then the text of every system message in the conversation: the provider vocabulary has one
 * system prompt, and Claude Code's system messages (its environment) hold for the whole conversation.
 */
function systemText(system: MessagesRequest["system"], messages: readonly InputMessage[]): string {
  const parts = typeof system === "string" ? [system] : (system ?? []).map((b) => b.text);
  for (const m of messages) {
    if (m.role !== "system") continue;
    if (typeof m.content === "string") parts.push(m.content);
    else for (const block of m.content) if (block.type === "text") parts.push(block.text);
  }
  return parts.join("\n\n");
}

/**
 * An explicit thinking budget onto the effort scale the adapters share (the inverse of the Anthropic adapter's).
 * `adaptive` (Claude Code's default for every model) leaves it to the model: no effort is sent, because models
 * without reasoning reject the field.
 */
function effortFor(thinking: MessagesRequest["thinking"]): ReasoningEffort | undefined {
  if (thinking?.type !== "enabled") return undefined;
  const budget = thinking.budget_tokens;
  if (budget === undefined) return "medium";
  if (budget <= 1024) return "minimal";
  if (budget <= 2048) return "low";
  if (budget <= 8192) return "medium";
  if (budget <= 16384) return "high";
  return "xhigh";
}

function projectMessages(messages: readonly InputMessage[], codec: SignatureCodec): ModelMessage[] {
  const out: ModelMessage[] = [];
  let openCalls = new Set<string>();
  for (const m of messages) {
    const blocks = typeof m.content === "string" ? [{ type: "text" as const, text: m.content }] : m.content;
    if (m.role === "system") continue;
    if (m.role === "assistant") {
      const assistant = projectAssistant(blocks, codec);
      openCalls = new Set(assistant.toolCalls.map((c) => c.id));
      out.push(assistant);
    } else {
      out.push(...projectUser(blocks, openCalls));
      openCalls = new Set();
    }
  }
  return out;
}

function projectAssistant(
  blocks: readonly ContentBlock[],
  codec: SignatureCodec,
): Extract<ModelMessage, { role: "assistant" }> {
  const text: string[] = [];
  const thinking: string[] = [];
  const toolCalls: ModelToolCall[] = [];
  let replay: ReplayState | undefined;
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        text.push(block.text);
        break;
      case "thinking":
        thinking.push(block.thinking);
        break;
      case "redacted_thinking":
        // Forged or foreign state is dropped, never an error: the turn goes on without it.
        replay = codec.openReplay(block.data) ?? replay;
        break;
      case "tool_use":
        toolCalls.push({ id: block.id, name: block.name, argumentsJson: JSON.stringify(block.input) });
        break;
      default:
        throw new MessagesApiError("invalid_request_error", `an assistant message cannot hold a ${block.type} block`);
    }
  }
  return {
    role: "assistant",
    text: text.join(""),
    ...(thinking.length > 0 ? { thinking: thinking.join("\n\n") } : {}),
    ...(replay ? { replay } : {}),
    toolCalls,
  };
}

/** Tool results first (they answer the previous assistant turn), then the user's own words and images. */
function projectUser(blocks: readonly ContentBlock[], openCalls: ReadonlySet<string>): ModelMessage[] {
  const results: ModelMessage[] = [];
  const text: string[] = [];
  const images: ModelImage[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case "text":
        text.push(block.text);
        break;
      case "image":
        images.push(modelImage(block.source));
        break;
      case "tool_result":
        if (!openCalls.has(block.tool_use_id)) {
          throw new MessagesApiError(
            "invalid_request_error",
            `tool_result ${JSON.stringify(block.tool_use_id)} has no matching tool_use in the previous assistant message`,
          );
        }
        results.push(toolResult(block));
        break;
      default:
        throw new MessagesApiError(
          "invalid_request_error",
          `${block.type} blocks in user messages are not supported by this gateway for non-Anthropic models`,
        );
    }
  }
  if (text.length === 0 && images.length === 0) return results;
  const content = text.join("\n\n");
  return [...results, images.length > 0 ? { role: "user", content, images } : { role: "user", content }];
}

function modelImage(source: Extract<ContentBlock, { type: "image" }>["source"]): ModelImage {
  return source.type === "url"
    ? { type: "url", url: source.url }
    : { type: "base64", mediaType: source.media_type, data: source.data };
}

/** The result's text (prefixed `Error: ` for an error) and its images (a screenshot, an image file Read returned). */
function toolResult(block: Extract<ContentBlock, { type: "tool_result" }>): ModelMessage {
  const content = block.content ?? "";
  const parts = typeof content === "string" ? [{ type: "text" as const, text: content }] : content;
  const text = parts.map((c) => (c.type === "text" ? c.text : "")).join("");
  const images = parts.flatMap((c) => (c.type === "image" ? [modelImage(c.source)] : []));
  return {
    role: "tool",
    toolCallId: block.tool_use_id,
    content: block.is_error ? `Error: ${text}` : text,
    ...(images.length > 0 ? { images } : {}),
  };
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  return b === undefined ? a : Math.min(a, b);
}
