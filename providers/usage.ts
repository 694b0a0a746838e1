import type { Usage } from "./types.js";

/** Adds two provider usages field by field; a field absent on both sides stays absent (docs/protocol/cursor-run.md §9).
 * */
export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = {};
  for (const k of ["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"] as const) {
    if (a[k] !== undefined || b[k] !== undefined) out[k] = (a[k] ?? 0) + (b[k] ?? 0);
  }
  return out;
}
