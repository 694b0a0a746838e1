// `npm run build`, run by `prepare`: bundles the gateway into dist/byok.js, the file `npm start` and bin/byok.js run,
// so a start parses one file of plain JavaScript instead of transpiling TypeScript on the fly. Dependencies stay in
// node_modules. dist/ is one folder below the root, like every source file that anchors a path on import.meta.url
// ("../prompt/", "../package.json"), so those paths name the same files from the sources and from the bundle.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));

/** The bundle's path relative to the repository root. */
export const DIST_ENTRY = "dist/byok.js";

export async function buildDist(): Promise<void> {
  await build({
    absWorkingDir: root,
    entryPoints: ["bin/byok.ts"],
    outfile: DIST_ENTRY,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    // Stack traces name the TypeScript sources (with node --enable-source-maps).
    sourcemap: true,
    // The sources sit beside the bundle in every install; the map only points at them.
    sourcesContent: false,
    logLevel: "warning",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildDist();
