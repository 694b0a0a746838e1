// root_prompt_messages_json blobs (docs/protocol/cursor-run.md §4.2): each is one UTF-8 JSON model message in the AI
// SDK shape ({role, content, providerOptions}). Our extra facts (origin, replay state, round id, call index, error
// flag) ride in providerOptions.byok so another reader of the same checkpoint still sees ordinary messages.
import * as z from "zod";
import type { CanonicalMessage, InlineImage } from "../providers/messages.js";
import { replayStateSchema } from "../providers/types.js";

const textPart = z.object({ type: z.literal("text"), text: z.string() });
/** A user's image in the AI SDK shape: base64 bytes and their media type. */
const imagePart = z.object({ type: z.literal("image"), image: z.string(), mediaType: z.string() });
const reasoningPart = z.object({ type: z.literal("reasoning"), text: z.string() });
const toolCallPart = z.object({
  type: z.literal("tool-call"),
  toolCallId: z.string(),
  toolName: z.string(),
  input: z.record(z.string(), z.unknown()),
});
const toolResultPart = z.object({
  type: z.literal("tool-result"),
  toolCallId: z.string(),
  toolName: z.string(),
  output: z.object({ type: z.enum(["text", "error-text"]), value: z.string() }),
});
const byok = z
  .object({
    origin: z.enum(["user", "runtime"]).optional(),
    eventId: z.string().optional(),
    toolRoundId: z.string().optional(),
    callIndexes: z.array(z.number().int()).optional(),
    replay: replayStateSchema.optional(),
  })
  .optional();
const options = z.object({ byok }).partial().optional();

const rootMessage = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: z.string(), providerOptions: options }),
  // Content is a plain string unless images come along (then the images, then the one text part).
  z.object({
    role: z.literal("user"),
    id: z.string().optional(),
    content: z.union([z.string(), z.array(z.union([imagePart, textPart]))]),
    providerOptions: options,
  }),
  z.object({
    role: z.literal("assistant"),
    content: z.array(z.union([textPart, reasoningPart, toolCallPart])),
    providerOptions: options,
  }),
  z.object({ role: z.literal("tool"), content: z.tuple([toolResultPart]), providerOptions: options }),
]);

export class RootMessageError extends Error {}

export function encodeRootMessage(m: CanonicalMessage): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(toJson(m)));
}

function toJson(m: CanonicalMessage): z.input<typeof rootMessage> {
  switch (m.role) {
    case "system":
      return { role: "system", content: m.content };
    case "user":
      // A runtime message's wire id is its stable event identity (docs/protocol/cursor-run.md §13), never a position.
      return {
        role: "user",
        ...(m.origin === "runtime" && m.eventId ? { id: `runtime:${m.eventId}` } : {}),
        content: m.images?.length
          ? [
              ...m.images.map((i) => ({ type: "image" as const, image: i.data, mediaType: i.mediaType })),
              { type: "text" as const, text: m.content },
            ]
          : m.content,
        providerOptions: { byok: { origin: m.origin, ...(m.eventId ? { eventId: m.eventId } : {}) } },
      };
    case "assistant":
      return {
        role: "assistant",
        content: [
          ...(m.thinking !== undefined ? [{ type: "reasoning" as const, text: m.thinking }] : []),
          ...(m.text ? [{ type: "text" as const, text: m.text }] : []),
          ...m.toolCalls.map((c) => ({
            type: "tool-call" as const,
            toolCallId: c.id,
            toolName: c.name,
            input: JSON.parse(c.argumentsJson) as Record<string, unknown>,
          })),
        ],
        providerOptions: {
          byok: {
            ...(m.toolRoundId ? { toolRoundId: m.toolRoundId } : {}),
            ...(m.toolCalls.length ? { callIndexes: m.toolCalls.map((c) => c.index) } : {}),
            ...(m.replay ? { replay: m.replay } : {}),
          },
        },
      };
    case "tool":
      return {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: m.toolCallId,
            toolName: m.toolName,
            output: { type: m.isError ? "error-text" : "text", value: m.content },
          },
        ],
        ...(m.toolRoundId ? { providerOptions: { byok: { toolRoundId: m.toolRoundId } } } : {}),
      };
  }
}

/** Decodes a root blob by its position's expected type (docs/protocol/cursor-run.md §3.4); anything else is a protocol
 * error. */
export function decodeRootMessage(bytes: Uint8Array): CanonicalMessage {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new RootMessageError(`root prompt message is not UTF-8 JSON: ${(e as Error).message}`);
  }
  const parsed = rootMessage.safeParse(json);
  if (!parsed.success)
    throw new RootMessageError(
      `root prompt message has an unexpected shape: ${parsed.error.issues[0]?.message ?? "invalid"}`,
    );
  const m = parsed.data;
  const meta = m.providerOptions?.byok ?? {};
  switch (m.role) {
    case "system":
      return { role: "system", content: m.content };
    case "user":
      return {
        role: "user",
        ...userContent(m.content),
        origin: meta.origin ?? "user",
        ...(meta.eventId ? { eventId: meta.eventId } : {}),
      };
    case "assistant": {
      const calls = m.content.filter((p) => p.type === "tool-call");
      const thinking = m.content.find((p) => p.type === "reasoning");
      return {
        role: "assistant",
        text: m.content
          .filter((p) => p.type === "text")
          .map((p) => p.text)
          .join(""),
        ...(thinking ? { thinking: thinking.text } : {}),
        ...(meta.replay ? { replay: meta.replay } : {}),
        ...(meta.toolRoundId ? { toolRoundId: meta.toolRoundId } : {}),
        toolCalls: calls.map((c, i) => ({
          id: c.toolCallId,
          name: c.toolName,
          argumentsJson: JSON.stringify(c.input),
          index: meta.callIndexes?.[i] ?? i,
        })),
      };
    }
    case "tool": {
      const [r] = m.content;
      return {
        role: "tool",
        toolCallId: r.toolCallId,
        toolName: r.toolName,
        content: r.output.value,
        isError: r.output.type === "error-text",
        ...(meta.toolRoundId ? { toolRoundId: meta.toolRoundId } : {}),
      };
    }
  }
}

/** A user root's text and images; a string content is text alone. */
function userContent(content: string | Array<z.infer<typeof imagePart> | z.infer<typeof textPart>>) {
  if (typeof content === "string") return { content };
  const images: InlineImage[] = [];
  let text = "";
  for (const part of content) {
    if (part.type === "image") images.push({ type: "base64", mediaType: part.mediaType, data: part.image });
    else text += part.text;
  }
  return { content: text, ...(images.length ? { images } : {}) };
}
