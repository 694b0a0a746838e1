// How log lines reach stderr. A line leaves at once when none left in the last window; lines that follow within it
// are held and leave together when it ends, so a burst (200 runs starting, a relay serving thousands of small calls)
// costs one write per window instead of one per line: under load a relay's line cost more to write than to make
// (docs/performance.md, fix 38). Held lines are written when the process exits, and by flushHeldLines before the
// CLI's own last words, so nothing logged before process.exit is lost or reordered; a SIGKILL loses at most one
// window of a burst.

/** Long enough to gather a burst, short enough that a reader never notices the wait. */
const HOLD_WINDOW_MS = 5;

export interface LineWriter {
  write(line: string): void;
  /** Writes the held lines now. */
  flush(): void;
}

export function coalescingWriter(out: { write(text: string): unknown }, windowMs = HOLD_WINDOW_MS): LineWriter {
  let held: string[] | undefined;
  const flush = () => {
    if (held?.length) out.write(held.splice(0).join(""));
  };
  // The window ends: what it gathered leaves as one write and opens the next window; a window that gathered
  // nothing closes, and the next line leaves at once.
  const endWindow = () => {
    const gathered = held?.length ?? 0;
    flush();
    held = undefined;
    if (gathered) openWindow();
  };
  const openWindow = () => {
    held = [];
    setTimeout(endWindow, windowMs).unref();
  };
  return {
    write(line) {
      if (held) return void held.push(line);
      out.write(line);
      openWindow();
    },
    flush,
  };
}

let stderr: LineWriter | undefined;

/** The one writer of the process's stderr, shared by every logger so their lines keep their order. */
export function stderrLines(): LineWriter {
  if (!stderr) {
    stderr = coalescingWriter(process.stderr);
    process.on("exit", stderr.flush);
  }
  return stderr;
}

/** Writes every held line now, before the CLI's own message (a no-op when nothing was logged). */
export function flushHeldLines(): void {
  stderr?.flush();
}
