// `POST /v1/messages/count_tokens` for the models that are not passed through to Anthropic. OpenAI's own models are
// counted with their real tokenizer (gpt-tokenizer, which knows each model's encoding); any other model (DeepSeek, a
// local one, an Azure deployment name) gets an estimate of one token per four bytes of text. Images are counted at
// a flat IMAGE_TOKENS each, since their size in tokens depends on pixels the gateway does not decode.
import type { EncodingName } from "gpt-tokenizer/mapping";
import type { ModelMessage, ModelRequest, ProviderKind } from "../providers/types.js";

/** A 1024×1024 image at OpenAI's high detail (4 tiles × 170 + 85). */
export const IMAGE_TOKENS = 765;
/** OpenAI's chat format costs this much per message (role and separators), the system prompt's included, plus as
 * much to prime the answer. */
const MESSAGE_OVERHEAD_TOKENS = 3;
const BYTES_PER_TOKEN = 4;

type Counter = (text: string) => number;

// Loaded on first use, like the model table: each encoding's ranks take several MB.
const ENCODINGS = new Map<EncodingName, () => Promise<Counter>>([
  ["o200k_base", () => import("gpt-tokenizer/encoding/o200k_base").then((e) => countWith(e.countTokens))],
  ["o200k_harmony", () => import("gpt-tokenizer/encoding/o200k_harmony").then((e) => countWith(e.countTokens))],
  ["cl100k_base", () => import("gpt-tokenizer/encoding/cl100k_base").then((e) => countWith(e.countTokens))],
]);

/** The conversation's own text may hold special-token strings: they are counted as text, never refused. */
function countWith(count: (text: string, options: { disallowedSpecial: Set<string> }) => number): Counter {
  const options = { disallowedSpecial: new Set<string>() };
  return (text) => count(text, options);
}

export async function countTokens(request: ModelRequest, kind: ProviderKind): Promise<number> {
  const texts = requestTexts(request);
  const images = request.messages.reduce((n, m) => n + (m.role === "assistant" ? 0 : (m.images?.length ?? 0)), 0);
  const counter = await tokenizerFor(request.model, kind);
  const textTokens = counter
    ? texts.reduce((n, text) => n + counter(text), 0) + MESSAGE_OVERHEAD_TOKENS * (request.messages.length + 2)
    : Math.ceil(texts.reduce((n, text) => n + Buffer.byteLength(text), 0) / BYTES_PER_TOKEN);
  return textTokens + images * IMAGE_TOKENS;
}

/** The real tokenizer of an OpenAI model on an OpenAI endpoint kind; undefined for everything else. */
async function tokenizerFor(model: string, kind: ProviderKind): Promise<Counter | undefined> {
  if (kind === "anthropic") return undefined;
  const [openAIModels, { DEFAULT_ENCODING, modelToEncodingMap }] = await Promise.all([
    import("gpt-tokenizer/models"),
    import("gpt-tokenizer/mapping"),
  ]);
  if (!Object.hasOwn(openAIModels, model)) return undefined;
  // The map lists only the models whose encoding is not the default (o200k_base).
  const encoding = Object.hasOwn(modelToEncodingMap, model)
    ? modelToEncodingMap[model as keyof typeof modelToEncodingMap]
    : DEFAULT_ENCODING;
  return ENCODINGS.get(encoding)?.();
}

/** Everything the model reads as text: the system prompt, the tool definitions and each message. */
function requestTexts(request: ModelRequest): string[] {
  const tools = request.tools.length > 0 ? [JSON.stringify(request.tools)] : [];
  return [request.system, ...tools, ...request.messages.flatMap(messageTexts)];
}

function messageTexts(message: ModelMessage): string[] {
  switch (message.role) {
    case "user":
    case "tool":
      return [message.content];
    case "assistant":
      return [message.text, ...message.toolCalls.flatMap((call) => [call.name, call.argumentsJson])];
  }
}
