// The request body of `POST /v1/messages`, as Anthropic documents it and Claude Code sends it. Fields this gateway
// does not act on (temperature, top_p, context_management, …) are dropped by the object schemas; content block
// types it cannot carry are refused with a message naming them.
import * as z from "zod";

const cacheControl = z.object({ type: z.string() }).optional();

const textBlock = z.object({ type: z.literal("text"), text: z.string(), cache_control: cacheControl });
/** Anthropic's own per-image limit; the whole body is bounded separately (anthropicEndpoint.maxBodyBytes). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

const imageSource = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("base64"),
    media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
    data: z
      .string()
      .min(1)
      .refine((data) => base64Bytes(data) <= MAX_IMAGE_BYTES, `image exceeds ${MAX_IMAGE_BYTES} bytes (5 MiB)`),
  }),
  z.object({ type: z.literal("url"), url: z.url({ protocol: /^https?$/ }) }),
]);
const imageBlock = z.object({ type: z.literal("image"), source: imageSource });
const toolUseBlock = z.object({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});
const toolResultBlock = z.object({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(z.union([textBlock, imageBlock]))]).optional(),
  is_error: z.boolean().optional(),
});
const thinkingBlock = z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() });
const redactedThinkingBlock = z.object({ type: z.literal("redacted_thinking"), data: z.string() });

const contentBlock = z.discriminatedUnion("type", [
  textBlock,
  imageBlock,
  toolUseBlock,
  toolResultBlock,
  thinkingBlock,
  redactedThinkingBlock,
]);
export type ContentBlock = z.infer<typeof contentBlock>;

// Claude Code 2.1 also sends `system` messages inside the conversation (its environment block).
const message = z.object({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(contentBlock)]),
});
export type InputMessage = z.infer<typeof message>;

const tool = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
});

export const messagesRequestSchema = z.object({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z.array(message).min(1),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  tools: z.array(tool).optional(),
  tool_choice: z
    .discriminatedUnion("type", [
      z.object({ type: z.enum(["auto", "any", "none"]) }),
      z.object({ type: z.literal("tool"), name: z.string().min(1) }),
    ])
    .optional(),
  thinking: z
    .object({ type: z.enum(["enabled", "disabled", "adaptive"]), budget_tokens: z.number().int().optional() })
    .optional(),
  metadata: z.object({ user_id: z.string().optional() }).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
});
export type MessagesRequest = z.infer<typeof messagesRequestSchema>;

/** `POST /v1/messages/count_tokens`: the same conversation without max_tokens or stream. */
export const countTokensRequestSchema = messagesRequestSchema.omit({ max_tokens: true, stream: true });
export type CountTokensRequest = z.infer<typeof countTokensRequestSchema>;

/** The decoded size of base64 data, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}
