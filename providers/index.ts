// Picks the endpoint adapter for a configured model. The loop only ever sees ProviderAdapter (seed 003 §16.2).
import { createAnthropicAdapter } from "./anthropic.js";
import { createOpenAIChatAdapter } from "./openai-chat.js";
import { ProviderError, type ProviderAdapter, type ProviderEndpoint } from "./types.js";

export function createProviderAdapter(endpoint: ProviderEndpoint): ProviderAdapter {
  switch (endpoint.kind) {
    case "openai-chat":
      return createOpenAIChatAdapter(endpoint);
    case "anthropic":
      return createAnthropicAdapter(endpoint);
    case "openai-responses":
      throw new ProviderError(`provider kind "${endpoint.kind}" is not supported yet`, "error");
  }
}
