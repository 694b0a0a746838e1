// Clock and summary statistics shared by the bench processes.

/**
 * Milliseconds on CLOCK_MONOTONIC (process.hrtime), which every process on the machine shares: the fake provider's
 * "first byte written" and the client's "first delta received" are comparable although they are different processes.
 */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Nearest-rank percentile of unsorted values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

export const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

/** Rounds for printing: 3 significant digits, never scientific notation for the magnitudes we print. */
export function round(value: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(value))));
  return Number(value.toFixed(Math.min(digits, 6)));
}
