// The prompt caches of the endpoint kinds as their documentation describes them, for the cache-share scenario. Token
// counts are estimated as characters / 4 of each part's JSON: only the share of cached input matters here.
import { createHash } from "node:crypto";

const tokensOf = (text: string): number => Math.ceil(text.length / 4);

export interface AnthropicCacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/** How far back from a breakpoint Anthropic looks for a prefix it has cached, in blocks. */
const LOOK_BACK_BLOCKS = 20;
/** The shortest prefix Anthropic caches (Claude Sonnet), in tokens. */
const ANTHROPIC_MIN_TOKENS = 1024;

type Block = Record<string, unknown>;
interface AnthropicBody {
  tools?: Block[];
  system?: Block[];
  messages: Array<{ role: string; content: string | Block[] }>;
}

/**
 * Anthropic: the prompt is the tools, the system blocks and the messages' content blocks, in that order. A
 * `cache_control` breakpoint writes the prefix that ends at its block; a request reads the longest prefix written
 * before that ends at one of its breakpoints or at one of the 20 blocks before one.
 */
export class AnthropicCache {
  private readonly written = new Set<string>();

  usage(body: AnthropicBody): AnthropicCacheUsage {
    const blocks = prefixes(body);
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    let read = 0;
    for (const at of breakpoints) {
      for (let i = at; i >= Math.max(0, at - LOOK_BACK_BLOCKS + 1); i--) {
        if (this.written.has(blocks[i]!.key)) {
          read = Math.max(read, blocks[i]!.end);
          break;
        }
      }
    }
    const cacheable = breakpoints.map((i) => blocks[i]!).filter((b) => b.end >= ANTHROPIC_MIN_TOKENS);
    for (const b of cacheable) this.written.add(b.key);
    const written = Math.max(0, (cacheable.at(-1)?.end ?? 0) - read);
    const total = blocks.at(-1)?.end ?? 0;
    return {
      input_tokens: total - read - written,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: written,
    };
  }
}

/** Per block: the hash of the prefix that ends with it, the prefix's tokens, and whether it carries a breakpoint. */
function prefixes(body: AnthropicBody): Array<{ key: string; end: number; breakpoint: boolean }> {
  const parts: Array<[string, Block]> = [
    ...(body.tools ?? []).map((t): [string, Block] => ["tool", t]),
    ...(body.system ?? []).map((b): [string, Block] => ["system", b]),
    ...body.messages.flatMap((m) =>
      (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content).map((b): [string, Block] => [
        m.role,
        b,
      ]),
    ),
  ];
  let key = "";
  let end = 0;
  return parts.map(([role, { cache_control, ...content }]) => {
    const text = `${role}:${JSON.stringify(content)}`;
    key = createHash("sha256").update(key).update(text).digest("hex");
    end += tokensOf(text);
    return { key, end, breakpoint: cache_control !== undefined };
  });
}

/** The shortest prefix OpenAI caches, and the step cached prefixes grow in, in tokens. */
const OPENAI_MIN_TOKENS = 1024;
const OPENAI_STEP_TOKENS = 128;
/** Prompts an OpenAI cache route remembers (older ones are evicted). */
const OPENAI_KEPT = 64;

/**
 * OpenAI (Chat Completions and Responses): a request goes to the cache its `prompt_cache_key` names (without one, the
 * one its first 256 tokens pick) and reads the longest prefix any earlier prompt there shares with it, counted in
 * 128-token steps from 1,024 tokens.
 */
export class OpenAIPrefixCache {
  private readonly routes = new Map<string, string[]>();

  /** The prompt's tokens and how many of them were cached; the prompt is remembered for later requests. */
  usage(prompt: string, promptCacheKey: string | undefined): { total: number; cached: number } {
    const route = promptCacheKey ?? prompt.slice(0, 256 * 4);
    const seen = this.routes.get(route) ?? [];
    const shared = Math.max(0, ...seen.map((earlier) => commonPrefix(earlier, prompt)));
    seen.push(prompt);
    if (seen.length > OPENAI_KEPT) seen.shift();
    this.routes.set(route, seen);
    const tokens = Math.floor(shared / 4);
    const cached =
      tokens < OPENAI_MIN_TOKENS
        ? 0
        : OPENAI_MIN_TOKENS + Math.floor((tokens - OPENAI_MIN_TOKENS) / OPENAI_STEP_TOKENS) * OPENAI_STEP_TOKENS;
    return { total: tokensOf(prompt), cached };
  }
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}
