// Which endpoint serves a run (ARCHITECTURE "External contract"): a configured model whose id matches the client's
// requested model, else the api-key credentials the client sent with the request, else no BYOK route at all.
import type { RequestedModel } from "../proto/gen/agent/v1/agent_pb.js";
import type { ProviderEndpoint } from "../providers/types.js";
import type { ModelConfig } from "./config.js";
import { RunSetupError } from "./run-errors.js";

export interface ResolvedModel {
  endpoint: ProviderEndpoint;
  model: string;
  contextWindow: number | undefined;
  maxOutputTokens: number | undefined;
}

const OPENAI_BASE_URL = "https://api.openai.com/v1";

export function resolveModel(models: readonly ModelConfig[], requested: RequestedModel | undefined): ResolvedModel {
  const modelId = requested?.modelId ?? "";
  const configured = models.find((m) => m.id === modelId);
  if (configured) {
    return {
      endpoint: { kind: configured.provider, baseUrl: configured.baseUrl, apiKey: configured.apiKey },
      model: configured.model,
      contextWindow: configured.contextWindow,
      maxOutputTokens: configured.maxOutputTokens,
    };
  }
  const credentials = requested?.credentials;
  if (credentials?.case === "apiKeyCredentials" && credentials.value.apiKey) {
    const baseUrl = (credentials.value.baseUrl || OPENAI_BASE_URL).replace(/\/$/, "");
    return { endpoint: { kind: "openai-chat", baseUrl, apiKey: credentials.value.apiKey }, model: modelId, contextWindow: undefined, maxOutputTokens: undefined };
  }
  throw new RunSetupError(
    `model ${JSON.stringify(modelId)} is not configured in byok-gateway and the request carries no API key; ` +
      "relaying runs for Cursor's own models is not supported yet",
    "failed_precondition",
  );
}
