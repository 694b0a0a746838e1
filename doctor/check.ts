// One check's outcome and how `byok doctor` prints it: ✓ or ✗ (with the fix on the next line), or - when skipped.
export type Outcome = "pass" | "fail" | "skip";

export interface Check {
  outcome: Outcome;
  /** What was checked and what was found, on one line. */
  title: string;
  /** For a failure: what to do about it. */
  fix?: string;
}

export const pass = (title: string): Check => ({ outcome: "pass", title });
export const fail = (title: string, fix: string): Check => ({ outcome: "fail", title, fix });
export const skip = (title: string): Check => ({ outcome: "skip", title });

const MARKS = new Map<Outcome, string>([
  ["pass", "✓"],
  ["fail", "✗"],
  ["skip", "-"],
]);

export function formatCheck(check: Check): string {
  const fix = check.fix === undefined ? "" : `    fix: ${check.fix}\n`;
  return `${MARKS.get(check.outcome)} ${check.title}\n${fix}`;
}

/** How long a check that reaches another process or host may take. */
export const PROBE_TIMEOUT_MS = 15_000;

/** The reason a Node error carries, for a one-line finding: its code when it has one. */
export function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const cause = (err as { cause?: NodeJS.ErrnoException }).cause?.code;
  return code ?? cause ?? (err instanceof Error ? err.message : String(err));
}
