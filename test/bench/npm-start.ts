// What `npm start` runs, read from package.json's start script (`exec env NAME=value… node FLAGS… ENTRY serve`), so
// the bench's gateway and the start-up figure run the quick start's process: its environment (glibc's malloc
// thresholds, docs/performance.md fixes 31 and 35) and its node flags.
import { readFileSync } from "node:fs";
import { DIST_ENTRY } from "../../scripts/build.js";

export interface StartCommand {
  env: Record<string, string>;
  /** The node flags and the entry, before the `serve` command. */
  nodeArgs: string[];
}

export function npmStartCommand(): StartCommand {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.trim().split(/\s+/);
  const node = words.indexOf("node");
  const assignments = words.slice(0, Math.max(node, 0)).filter((w) => w !== "exec" && w !== "env");
  const env = Object.fromEntries(assignments.map((w) => [w.slice(0, w.indexOf("=")), w.slice(w.indexOf("=") + 1)]));
  const nodeArgs = words.slice(node + 1, words.indexOf("serve"));
  if (node < 0 || assignments.some((w) => w.indexOf("=") <= 0) || nodeArgs.at(-1) !== DIST_ENTRY)
    throw new Error(`package.json's start script is not "[exec] [env NAME=value…] node … ${DIST_ENTRY} serve"`);
  return { env, nodeArgs };
}
