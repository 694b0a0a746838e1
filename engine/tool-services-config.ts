// The optional `webSearch` and `imageGeneration` config sections (README.md "Web search and image generation"): the
// services behind approved WebSearch and GenerateImage calls. Keys are secrets: read here, never logged or echoed.
import * as z from "zod";

export const WEB_SEARCH_KINDS = ["tavily", "brave", "searxng"] as const;

export interface WebSearchConfig {
  kind: (typeof WEB_SEARCH_KINDS)[number];
  /** No trailing slash; each kind has its public endpoint as default except searxng (self-hosted). */
  baseUrl: string;
  /** Empty for searxng, which takes none. */
  apiKey: string;
  maxResults: number;
  timeoutMs: number;
}

export interface ImageGenerationConfig {
  kind: "openai-images";
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs: number;
}

const DEFAULT_BASE_URLS: Record<WebSearchConfig["kind"], string | undefined> = {
  tavily: "https://api.tavily.com",
  brave: "https://api.search.brave.com",
  searxng: undefined,
};

const nonEmpty = z.string().min(1, "must not be empty");
const timeoutMs = z.number().int("expected an integer").min(1000, "expected at least 1000").max(600_000).optional();
const httpUrl = z
  .string()
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), "expected an http(s) URL")
  .transform((url) => url.replace(/\/$/, ""));
const oneKey = (k: { apiKey?: string | undefined; apiKeyEnv?: string | undefined }) =>
  k.apiKey === undefined || k.apiKeyEnv === undefined;

export const webSearchSchema = z
  .strictObject({
    kind: z.enum(WEB_SEARCH_KINDS),
    baseUrl: httpUrl.optional(),
    apiKey: nonEmpty.optional(),
    apiKeyEnv: nonEmpty.optional(),
    maxResults: z.number().int("expected an integer").min(1).max(20).optional(),
    timeoutMs,
  })
  .refine(oneKey, "apiKey and apiKeyEnv exclude each other")
  .refine((s) => s.kind !== "searxng" || s.baseUrl !== undefined, {
    path: ["baseUrl"],
    message: "required for searxng",
  })
  .refine((s) => s.kind === "searxng" || s.apiKey !== undefined || s.apiKeyEnv !== undefined, {
    message: "one of apiKey or apiKeyEnv is required",
  })
  .optional();

export const imageGenerationSchema = z
  .strictObject({
    kind: z.literal("openai-images"),
    baseUrl: httpUrl.default("https://api.openai.com/v1"),
    apiKey: nonEmpty.optional(),
    apiKeyEnv: nonEmpty.optional(),
    model: nonEmpty,
    timeoutMs,
  })
  .refine(
    (s) => (s.apiKey === undefined) !== (s.apiKeyEnv === undefined),
    "exactly one of apiKey or apiKeyEnv is required",
  )
  .optional();

type Raw = { apiKey?: string | undefined; apiKeyEnv?: string | undefined };

function keyOf(raw: Raw, field: string, env: NodeJS.ProcessEnv, problems: string[]): string {
  if (raw.apiKey !== undefined || raw.apiKeyEnv === undefined) return raw.apiKey ?? "";
  const value = env[raw.apiKeyEnv] ?? "";
  if (value === "") problems.push(`${field}.apiKeyEnv: environment variable ${raw.apiKeyEnv} is not set`);
  return value;
}

/** The sections with their keys read from the environment; each problem names the field, never a value. */
export function resolveToolServices(
  raw: { webSearch?: z.infer<typeof webSearchSchema>; imageGeneration?: z.infer<typeof imageGenerationSchema> },
  source: string,
  env: NodeJS.ProcessEnv,
  problems: string[],
): { webSearch?: WebSearchConfig; imageGeneration?: ImageGenerationConfig } {
  const out: { webSearch?: WebSearchConfig; imageGeneration?: ImageGenerationConfig } = {};
  if (raw.webSearch) {
    const s = raw.webSearch;
    out.webSearch = {
      kind: s.kind,
      baseUrl: s.baseUrl ?? DEFAULT_BASE_URLS[s.kind]!,
      apiKey: keyOf(s, `${source}: webSearch`, env, problems),
      maxResults: s.maxResults ?? 5,
      timeoutMs: s.timeoutMs ?? 30_000,
    };
  }
  if (raw.imageGeneration) {
    const i = raw.imageGeneration;
    out.imageGeneration = {
      kind: i.kind,
      baseUrl: i.baseUrl,
      apiKey: keyOf(i, `${source}: imageGeneration`, env, problems),
      model: i.model,
      timeoutMs: i.timeoutMs ?? 120_000,
    };
  }
  return out;
}
