// What `npm start` runs, read from package.json's start script (`exec env NAME=value… node FLAGS… ENTRY serve`), so
// the bench's gateway and the start-up figure run the quick start's process: its environment (glibc's malloc trim
// threshold, docs/performance.md fix 31) and its node flags.
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
  const env: Record<string, string> = {};
  let i = words[0] === "exec" ? 1 : 0;
  if (words[i] === "env") i++;
  for (let eq = words[i]?.indexOf("=") ?? -1; eq > 0; eq = words[++i]?.indexOf("=") ?? -1)
    env[words[i]!.slice(0, eq)] = words[i]!.slice(eq + 1);
  const serve = words.indexOf("serve");
  const nodeArgs = words.slice(i + 1, serve);
  if (words[i] !== "node" || nodeArgs.at(-1) !== DIST_ENTRY)
    throw new Error(`package.json's start script is not "[exec] [env NAME=value…] node … ${DIST_ENTRY} serve"`);
  return { env, nodeArgs };
}
