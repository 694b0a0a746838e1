// One measured figure: the gateway's value, the baseline measured in the same run, their ratio and the issue's
// target. Printed as one JSON line each, then gathered into the human summary and docs/performance.md.
import type { Workspace } from "../support/client-workspace.js";
import type { Fakes, ServerProcess } from "./processes.js";
import { round } from "./stats.js";

export interface Figure {
  scenario: string;
  figure: string;
  unit: string;
  gateway: number;
  /** The raw relay (or bare pass-through) in the same run; null when there is no meaningful baseline. */
  baseline: number | null;
  /** gateway / baseline, or the figure's own ratio (e.g. turn 200 / turn 1) when baseline is null. */
  ratio: number | null;
  /** The target, in words, when it has one. */
  target?: string;
  /** Whether the target was met; absent without a target. */
  met?: boolean;
  note?: string;
}

export interface BenchContext {
  quick: boolean;
  gateway: ServerProcess;
  raw: ServerProcess;
  fakes: Fakes;
  workspace: Workspace;
  log(line: string): void;
}

export function figure(f: Figure): Figure {
  const rounded: Figure = {
    ...f,
    gateway: round(f.gateway),
    baseline: f.baseline === null ? null : round(f.baseline),
    ratio: f.ratio === null ? null : round(f.ratio),
  };
  process.stdout.write(`${JSON.stringify(rounded)}\n`);
  return rounded;
}

/** gateway / baseline, null when the baseline is zero or missing. */
export function ratioOf(gateway: number, baseline: number | null): number | null {
  return baseline === null || baseline === 0 ? null : gateway / baseline;
}

/** The verdict on a figure's target; a --quick run is too small to judge one. */
export function verdict(f: Figure, quick: boolean): string {
  if (f.target === undefined) return "";
  if (quick) return `smoke run, targets not judged (${f.target})`;
  return `${f.met ? "met" : "MISSED"} (${f.target})`;
}

export function summaryLines(figures: readonly Figure[], quick: boolean): string[] {
  const rows = figures.map((f) => [
    `${f.scenario}: ${f.figure}`,
    `${f.gateway} ${f.unit}`,
    f.baseline === null ? "—" : `${f.baseline} ${f.unit}`,
    f.ratio === null ? "—" : `${f.ratio}×`,
    verdict(f, quick),
  ]);
  const header = ["figure", "gateway", "baseline", "ratio", "target"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
