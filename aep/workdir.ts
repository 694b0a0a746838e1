// Where a session's worker runs. A client may choose (init data.workdir, control cd): an existing directory, absolute
// or relative to aep.workdir, and inside aep.workdir when that is configured. Without a choice: aep.workdir, else a
// fresh directory of the session under the data dir.
import { randomUUID } from "node:crypto";
import { mkdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";

export function workdirResolver(o: {
  base?: string;
  dataDir: string;
}): (requested: string | undefined) => Promise<string> {
  return async (requested) => {
    if (requested === undefined) {
      if (o.base) return realpath(o.base);
      const dir = join(o.dataDir, "aep-workdirs", randomUUID());
      await mkdir(dir, { recursive: true });
      return dir;
    }
    if (!isAbsolute(requested) && !o.base)
      throw new Error(`workdir must be an absolute path, got ${JSON.stringify(requested)}`);
    const path = isAbsolute(requested) ? requested : join(o.base!, requested);
    const real = await realpath(path).catch(() => {
      throw new Error(`workdir ${JSON.stringify(requested)} does not exist`);
    });
    if (!(await stat(real)).isDirectory()) throw new Error(`workdir ${JSON.stringify(requested)} is not a directory`);
    if (o.base) {
      const inside = relative(await realpath(o.base), real);
      if (inside.startsWith("..") || isAbsolute(inside) || inside.split(sep)[0] === "..")
        throw new Error(`workdir ${JSON.stringify(requested)} is outside aep.workdir`);
    }
    return real;
  };
}
