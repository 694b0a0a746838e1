// The services behind approved WebSearch and GenerateImage calls (docs/protocol/cursor-tools.md §5.9): the search and
// image endpoints the config names (engine/tool-services-config.ts). Every outcome is a ServiceResult the model can
// read — not configured, refused, unreachable, too slow — never a thrown error or a hang. Replies are read up to a
// bound, and no message carries a key.
import type { ServiceRequest, ServiceResult } from "../cursor/tools/types.js";
import { redact } from "../log/logger.js";
import type { ImageGenerationConfig, WebSearchConfig } from "./tool-services-config.js";

export interface ToolServices {
  call(request: ServiceRequest, signal: AbortSignal): Promise<ServiceResult>;
}

const MAX_SEARCH_REPLY_BYTES = 4 * 1024 * 1024;
const MAX_IMAGE_REPLY_BYTES = 64 * 1024 * 1024;
/** A search chunk the model reads; longer page extracts are cut here. */
const MAX_CHUNK_CHARS = 2000;

type Reference = { title: string; url: string; chunk: string };

class ServiceError extends Error {}

/** The reply as text, refused once it passes `max` bytes (a misbehaving endpoint cannot fill the memory). */
async function boundedText(response: Response, max: number): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new ServiceError(`the reply is larger than ${max} bytes`);
    }
    parts.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(parts));
}

async function requestJson(url: string, init: RequestInit, max: number, signal: AbortSignal): Promise<unknown> {
  const response = await fetch(url, { ...init, signal });
  const text = await boundedText(response, max);
  if (!response.ok) throw new ServiceError(`HTTP ${response.status}: ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ServiceError("the reply is not JSON");
  }
}

const str = (v: unknown) => (typeof v === "string" ? v : "");
const list = (v: unknown): Array<Record<string, unknown>> =>
  Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => typeof x === "object" && x !== null) : [];

function reference(title: unknown, url: unknown, chunk: unknown): Reference {
  return { title: str(title), url: str(url), chunk: str(chunk).slice(0, MAX_CHUNK_CHARS) };
}

/** One request per kind, each read into title / url / chunk references. */
async function search(c: WebSearchConfig, query: string, signal: AbortSignal): Promise<Reference[]> {
  const max = MAX_SEARCH_REPLY_BYTES;
  switch (c.kind) {
    case "tavily": {
      const body = JSON.stringify({ query, max_results: c.maxResults });
      const headers = { "content-type": "application/json", authorization: `Bearer ${c.apiKey}` };
      const reply = await requestJson(`${c.baseUrl}/search`, { method: "POST", headers, body }, max, signal);
      return list((reply as { results?: unknown }).results).map((r) => reference(r.title, r.url, r.content));
    }
    case "brave": {
      const url = `${c.baseUrl}/res/v1/web/search?${new URLSearchParams({ q: query, count: String(c.maxResults) })}`;
      const headers = { accept: "application/json", "x-subscription-token": c.apiKey };
      const reply = (await requestJson(url, { headers }, max, signal)) as { web?: { results?: unknown } };
      return list(reply.web?.results).map((r) => reference(r.title, r.url, r.description));
    }
    case "searxng": {
      const url = `${c.baseUrl}/search?${new URLSearchParams({ q: query, format: "json" })}`;
      const reply = await requestJson(url, { headers: { accept: "application/json" } }, max, signal);
      return list((reply as { results?: unknown }).results).map((r) => reference(r.title, r.url, r.content));
    }
  }
}

/** The model's aspect ratio as the nearest size the OpenAI Images API takes. */
const SIZES = new Map([
  ["1:1", "1024x1024"],
  ["4:3", "1536x1024"],
  ["16:9", "1536x1024"],
  ["3:4", "1024x1536"],
  ["9:16", "1024x1536"],
]);

async function generate(c: ImageGenerationConfig, prompt: string, ratio: string | undefined, signal: AbortSignal) {
  const body = JSON.stringify({ model: c.model, prompt, n: 1, ...(ratio ? { size: SIZES.get(ratio) } : {}) });
  const headers = { "content-type": "application/json", authorization: `Bearer ${c.apiKey}` };
  const init = { method: "POST", headers, body };
  const reply = await requestJson(`${c.baseUrl}/images/generations`, init, MAX_IMAGE_REPLY_BYTES, signal);
  const [first] = list((reply as { data?: unknown }).data);
  const b64 = str(first?.b64_json);
  if (!b64) throw new ServiceError("the reply carries no image (data[0].b64_json)");
  const format = str((reply as { output_format?: unknown }).output_format) || "png";
  return { data: new Uint8Array(Buffer.from(b64, "base64")), mimeType: `image/${format === "jpg" ? "jpeg" : format}` };
}

/** Runs `work` under the call's signal and the service's own time limit; any failure is a readable error result. */
async function guarded(
  what: string,
  secret: string,
  timeoutMs: number,
  signal: AbortSignal,
  work: (signal: AbortSignal) => Promise<ServiceResult>,
): Promise<ServiceResult> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    return await work(AbortSignal.any([signal, timeout]));
  } catch (e) {
    const cause = timeout.aborted ? `no answer within ${timeoutMs} ms` : e instanceof Error ? e.message : String(e);
    return { kind: "error", message: redact(`${what} failed: ${cause}`, secret) };
  }
}

export function createToolServices(config: {
  webSearch?: WebSearchConfig | undefined;
  imageGeneration?: ImageGenerationConfig | undefined;
}): ToolServices {
  const { webSearch, imageGeneration } = config;
  return {
    async call(request, signal) {
      if (request.kind === "webSearch") {
        if (!webSearch)
          return {
            kind: "error",
            message:
              "No web search provider is configured in byok-gateway (config section webSearch), so the search could " +
              "not run. Answer from what you know or read the pages with other tools.",
          };
        return guarded(
          `The web search (${webSearch.kind})`,
          webSearch.apiKey,
          webSearch.timeoutMs,
          signal,
          async (s) => ({
            kind: "webSearch",
            references: await search(webSearch, request.query, s),
          }),
        );
      }
      if (!imageGeneration)
        return {
          kind: "error",
          message:
            "No image generation provider is configured in byok-gateway (config section imageGeneration), so no " +
            "image could be generated.",
        };
      const c = imageGeneration;
      return guarded("The image generation", c.apiKey, c.timeoutMs, signal, async (s) => ({
        kind: "generateImage",
        ...(await generate(c, request.prompt, request.aspectRatio, s)),
      }));
    },
  };
}
