// Meters every model call of a front door (docs/status-api.md §4): the provider adapters are wrapped so that each
// usage event a call reports is added to the store's usage table as it arrives, whichever front door made the call.
import type { Logger } from "../log/logger.js";
import type { ProviderAdapter, ProviderEndpoint, Usage } from "../providers/types.js";
import { type UsageRecord, usageDay } from "../store/index.js";

type AdapterFactory = (endpoint: ProviderEndpoint) => ProviderAdapter;

export function meteredAdapters(
  adapterFor: AdapterFactory,
  frontDoor: string,
  record: (r: UsageRecord) => Promise<void>,
  log: Logger,
): AdapterFactory {
  const meter = (model: string, usage: Usage) =>
    record({
      frontDoor,
      model,
      day: usageDay(new Date()),
      input: usage.inputTokens ?? 0,
      output: usage.outputTokens ?? 0,
      cacheRead: usage.cacheReadTokens ?? 0,
      cacheWrite: usage.cacheWriteTokens ?? 0,
    }).catch((e: unknown) => log.warn("usage not recorded", { front_door: frontDoor, model, error: String(e) }));
  return (endpoint) => {
    const adapter = adapterFor(endpoint);
    return {
      async *stream(request, signal) {
        for await (const event of adapter.stream(request, signal)) {
          if (event.type === "usage") void meter(request.model, event.usage);
          yield event;
        }
      },
    };
  };
}
