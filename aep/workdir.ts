// Where a session's worker runs, and its HOME. A client may choose a workdir (init data.workdir, control cd) only
// inside the configured root `aep.workdir`: an existing directory, absolute or relative to it. Without a root, a
// client's choice is refused and each session gets a fresh directory under the data dir. The stored path is the
// realpath; `checkWorkdir` repeats the check at every worker start, so a symlink swapped in later is refused.
// Each session's HOME is its own directory under the data dir: never the workdir, never the user's real HOME.
import { randomUUID } from "node:crypto";
import { mkdirSync, realpathSync, statSync } from "node:fs";
import { mkdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";

export interface WorkdirPolicy {
  /** aep.workdir: the default workdir and the root every client-chosen one must lie in. */
  base?: string;
  dataDir: string;
}

/** Fresh per-session workdirs when no root is configured. */
const FRESH_WORKDIRS = "aep-workdirs";
/** Per-session HOMEs (the CLI's ~/.claude with its transcripts lives there). */
const HOMES = "aep-homes";

export function workdirResolver(o: WorkdirPolicy): (requested: string | undefined) => Promise<string> {
  return async (requested) => {
    if (requested === undefined) {
      if (o.base) return realpath(o.base);
      const dir = join(o.dataDir, FRESH_WORKDIRS, randomUUID());
      await mkdir(dir, { recursive: true });
      return realpath(dir);
    }
    if (!o.base)
      throw new Error(
        "a client-chosen workdir needs aep.workdir configured (the root it must lie in); omit workdir to get a " +
          "fresh one",
      );
    const path = isAbsolute(requested) ? requested : join(o.base, requested);
    const real = await realpath(path).catch(() => {
      throw new Error(`workdir ${JSON.stringify(requested)} does not exist`);
    });
    if (!(await stat(real)).isDirectory()) throw new Error(`workdir ${JSON.stringify(requested)} is not a directory`);
    if (!inside(await realpath(o.base), real))
      throw new Error(`workdir ${JSON.stringify(requested)} is outside aep.workdir`);
    return real;
  };
}

/** Why a stored workdir may no longer be used (undefined when it may): run before every worker start. */
export function workdirChecker(o: WorkdirPolicy): (workdir: string) => string | undefined {
  return (workdir) => {
    let real: string;
    try {
      real = realpathSync(workdir);
      if (!statSync(real).isDirectory()) return `workdir ${workdir} is no longer a directory`;
    } catch {
      return `workdir ${workdir} no longer exists`;
    }
    if (real !== workdir) return `workdir ${workdir} now resolves to ${real} (a symlink was put in its place)`;
    const root = o.base ?? join(o.dataDir, FRESH_WORKDIRS);
    let realRoot: string;
    try {
      realRoot = realpathSync(root);
    } catch {
      return `the workdir root ${root} no longer exists`;
    }
    return inside(realRoot, real) || real === realRoot ? undefined : `workdir ${workdir} is outside ${root}`;
  };
}

/** The session's own HOME under the data dir, created on first use. */
export function homeFor(dataDir: string, sessionId: string): string {
  const home = join(dataDir, HOMES, sessionId);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  return home;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
