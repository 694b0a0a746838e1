// Which endpoint serves a run (README.md "Configuration"): a configured model whose id matches the client's
// requested model, else the credentials the client sent with the request (an API key, or an Azure OpenAI
// deployment), else no BYOK route at all. The client's model parameters (effort, max mode) apply either way.
import { createHash } from "node:crypto";
import type { RequestedModel } from "../proto/gen/agent/v1/agent_pb.js";
import type { ProviderEndpoint, ReasoningEffort } from "../providers/types.js";
import type { ModelConfig } from "./config.js";
import { RunSetupError } from "./run-errors.js";

export interface ResolvedModel {
  endpoint: ProviderEndpoint;
  model: string;
  contextWindow: number | undefined;
  maxOutputTokens: number | undefined;
  reasoningEffort: ReasoningEffort | undefined;
  /** The endpoint takes image input (config `images`, default true; the user's own keys always do). */
  images: boolean;
  /** Whether calls carry a per-conversation prompt_cache_key (promptCacheKey below). */
  promptCacheKey: boolean;
}

const OPENAI_BASE_URL = "https://api.openai.com/v1";
const ANTHROPIC_BASE_URL = "https://api.anthropic.com";
/** The Azure OpenAI GA api-version the Chat adapter speaks (streamed usage and max_completion_tokens included). */
export const AZURE_API_VERSION = "2024-10-21";

const EFFORTS: readonly ReasoningEffort[] = ["none", "minimal", "low", "medium", "high", "xhigh"];

export function resolveModel(models: readonly ModelConfig[], requested: RequestedModel | undefined): ResolvedModel {
  const modelId = requested?.modelId ?? "";
  const reasoningEffort = requestedEffort(requested);
  const configured = models.find((m) => m.id === modelId);
  if (configured) {
    const { provider: kind, baseUrl, apiKey, azureApiVersion } = configured;
    const endpoint: ProviderEndpoint = {
      kind,
      baseUrl,
      apiKey,
      ...(azureApiVersion === undefined ? {} : { azureApiVersion }),
    };
    return {
      endpoint,
      model: configured.model,
      contextWindow: configured.contextWindow,
      maxOutputTokens: configured.maxOutputTokens,
      reasoningEffort,
      images: configured.images ?? true,
      promptCacheKey: takesPromptCacheKey(endpoint, configured.promptCacheKey),
    };
  }
  const endpoint = credentialsEndpoint(requested);
  if (endpoint)
    return {
      endpoint,
      model: modelId,
      contextWindow: undefined,
      maxOutputTokens: undefined,
      reasoningEffort,
      images: true,
      promptCacheKey: takesPromptCacheKey(endpoint, undefined),
    };
  throw new RunSetupError(
    // run-route.ts sends such runs upstream; reaching this means the two disagree.
    `model ${JSON.stringify(modelId)} is not configured in byok-gateway and the request carries no usable credentials`,
    "failed_precondition",
  );
}

/** The endpoint the request's own credentials name; messages never quote one (docs/protocol/README.md §6.8). */
function credentialsEndpoint(requested: RequestedModel | undefined): ProviderEndpoint | undefined {
  const credentials = requested?.credentials;
  switch (credentials?.case) {
    case "apiKeyCredentials":
      return credentials.value.apiKey ? apiKeyEndpoint(credentials.value.apiKey, credentials.value.baseUrl) : undefined;
    case "azureCredentials": {
      const { apiKey, baseUrl, deployment } = credentials.value;
      const missing = [
        ["api_key", apiKey],
        ["base_url", baseUrl],
        ["deployment", deployment],
      ]
        .filter(([, v]) => !v)
        .map(([name]) => name);
      if (missing.length > 0)
        throw new RunSetupError(`azure_credentials lack ${missing.join(", ")}`, "invalid_argument");
      // The resource endpoint, with or without its /openai suffix, then the deployment's Chat Completions route.
      const resource = trimSlashes(baseUrl).replace(/\/openai$/, "");
      return {
        kind: "openai-chat",
        baseUrl: `${resource}/openai/deployments/${encodeURIComponent(deployment)}`,
        apiKey,
        azureApiVersion: AZURE_API_VERSION,
      };
    }
    case "bedrockCredentials":
      throw new RunSetupError(
        "Amazon Bedrock credentials are not supported by byok-gateway; configure the model in the gateway config " +
          "(provider openai-chat, openai-responses or anthropic) or use an API key",
        "failed_precondition",
      );
    case undefined:
      return undefined;
  }
}

/**
 * The credentials do not say whose key it is. Anthropic's keys (`sk-ant-…`, also through a proxy base URL) and base
 * URLs on api.anthropic.com go to the Messages API; everything else is OpenAI or OpenAI-compatible Chat Completions.
 */
function apiKeyEndpoint(apiKey: string, baseUrl: string | undefined): ProviderEndpoint {
  const host = baseUrl ? hostOf(baseUrl) : undefined;
  const anthropic = apiKey.startsWith("sk-ant-") || host === "api.anthropic.com";
  if (anthropic) {
    // Our Anthropic base URLs have no /v1 (the adapter adds /v1/messages).
    return {
      kind: "anthropic",
      baseUrl: baseUrl ? trimSlashes(baseUrl).replace(/\/v1$/, "") : ANTHROPIC_BASE_URL,
      apiKey,
    };
  }
  return { kind: "openai-chat", baseUrl: baseUrl ? trimSlashes(baseUrl) : OPENAI_BASE_URL, apiKey };
}

/**
 * OpenAI's own API takes `prompt_cache_key` on Chat Completions and Responses; an OpenAI-compatible server may refuse
 * a field it does not know, so elsewhere it is sent only when the model config says so. Anthropic caches by
 * breakpoints in the request instead (providers/anthropic.ts).
 */
function takesPromptCacheKey(endpoint: ProviderEndpoint, configured: boolean | undefined): boolean {
  if (endpoint.kind === "anthropic") return false;
  return configured ?? hostOf(endpoint.baseUrl) === "api.openai.com";
}

/** A conversation's prompt_cache_key: the same for all its calls, without naming the conversation. */
export function promptCacheKeyOf(conversationId: string): string {
  return `byok-${createHash("sha256").update(conversationId).digest("hex").slice(0, 32)}`;
}

/**
 * The client's `effort` model parameter (as captured: effort=high); max mode without one asks for "high". An
 * effort we do not know is refused rather than guessed.
 */
function requestedEffort(requested: RequestedModel | undefined): ReasoningEffort | undefined {
  const value = requested?.parameters.find((p) => p.id === "effort")?.value;
  if (value === undefined || value === "") return requested?.maxMode ? "high" : undefined;
  const effort = EFFORTS.find((e) => e === value.toLowerCase());
  if (effort === undefined) {
    throw new RunSetupError(
      `model parameter effort=${JSON.stringify(value)} is not one of ${EFFORTS.join(", ")}`,
      "invalid_argument",
    );
  }
  return effort;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    throw new RunSetupError("api_key_credentials.base_url is not a URL", "invalid_argument");
  }
}

function trimSlashes(url: string): string {
  return url.replace(/\/+$/, "");
}
