// Picks the endpoint adapter for a configured model. The loop only ever sees ProviderAdapter
// (docs/protocol/cursor-run.md §7.2).
import { createAnthropicAdapter } from "./anthropic.js";
import { createOpenAIChatAdapter } from "./openai-chat.js";
import { createOpenAIResponsesAdapter } from "./openai-responses.js";
import type { ProviderAdapter, ProviderEndpoint } from "./types.js";

export function createProviderAdapter(endpoint: ProviderEndpoint): ProviderAdapter {
  switch (endpoint.kind) {
    case "openai-chat":
      return createOpenAIChatAdapter(endpoint);
    case "openai-responses":
      return createOpenAIResponsesAdapter(endpoint);
    case "anthropic":
      return createAnthropicAdapter(endpoint);
  }
}
