// Token usage of the endpoint's calls, summed per configured model since start: what the diagnostics report. Keys are
// configured model ids (never client input), so the map is bounded by the config.
import type { Usage } from "../providers/types.js";

export interface ModelUsageTotals {
  /** Calls of /v1/messages carried out on the model, whether or not the provider reported usage. */
  requests: number;
  /** The whole prompt, cache reads and writes included (the provider vocabulary's inputTokens). */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export class UsageTotals {
  private readonly byModel = new Map<string, ModelUsageTotals>();

  countRequest(modelId: string): void {
    this.entry(modelId).requests++;
  }

  add(modelId: string, usage: Usage): void {
    const totals = this.entry(modelId);
    totals.inputTokens += usage.inputTokens ?? 0;
    totals.outputTokens += usage.outputTokens ?? 0;
    totals.cacheReadTokens += usage.cacheReadTokens ?? 0;
    totals.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
  }

  snapshot(): Record<string, ModelUsageTotals> {
    return Object.fromEntries([...this.byModel].map(([id, totals]) => [id, { ...totals }]));
  }

  private entry(modelId: string): ModelUsageTotals {
    let totals = this.byModel.get(modelId);
    if (totals === undefined) {
      totals = { requests: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
      this.byModel.set(modelId, totals);
    }
    return totals;
  }
}
