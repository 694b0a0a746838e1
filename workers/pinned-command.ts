// A worker CLI pinned in this repository's node_modules/.bin. Searched upward from this module, as Node resolves
// packages, so the same lookup works from the sources and from the dist/ bundle.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The pinned `node_modules/.bin/<name>` if one is installed, else the bare name (found on PATH). */
export function pinnedCommand(name: string): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const bin = join(dir, "node_modules", ".bin", name);
    if (existsSync(bin)) return bin;
    if (dirname(dir) === dir) return name;
  }
}
