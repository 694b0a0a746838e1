// `npm run build`, run by `prepare`: bundles the gateway into dist/, whose entry dist/byok.js is the file `npm start`
// and bin/byok.js run, so a start parses plain JavaScript instead of transpiling TypeScript on the fly. dist/ is one
// folder below the root, like every source file that anchors a path on import.meta.url ("../prompt/",
// "../package.json"), so those paths name the same files from the sources and from every chunk of the bundle.
import { build, type Plugin } from "esbuild";
import { readdir, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));

/** The bundle's entry, relative to the repository root. */
export const DIST_ENTRY = "dist/byok.js";

/**
 * Left in node_modules: the native SQLite driver, the database drivers of knex's other dialects (never loaded), ws's
 * optional native helpers, and what loads only on demand and is large or a tool of its own (the status page's
 * bundler, the diagram renderer, the tokenizer's encodings, pino-pretty for a terminal).
 */
const EXTERNAL = [
  "sqlite3",
  "better-sqlite3",
  "mysql",
  "mysql2",
  "mariadb",
  "pg",
  "pg-native",
  "pg-query-stream",
  "tedious",
  "oracledb",
  "bufferutil",
  "utf-8-validate",
  "esbuild",
  "@viz-js/viz",
  "gpt-tokenizer",
  "pino-pretty",
];

/**
 * knex requires every dialect it knows from one table of loaders; the gateway hands it its own SQLite client class,
 * so the others (a quarter of knex) are left out of the bundle as never-loaded requires.
 */
const sqliteOnlyKnex: Plugin = {
  name: "sqlite-only-knex",
  setup(b) {
    b.onResolve({ filter: /^\.\/[a-z0-9-]+$/ }, (args) =>
      /knex[/\\]lib[/\\]dialects[/\\]index\.js$/.test(args.importer) && args.path !== "./sqlite3"
        ? { path: args.path, external: true }
        : undefined,
    );
  },
};

export async function buildDist(): Promise<void> {
  const outdir = join(root, dirname(DIST_ENTRY));
  const result = await build({
    absWorkingDir: root,
    entryPoints: { [basename(DIST_ENTRY, ".js")]: "bin/byok.ts" },
    outdir,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // The pure-JavaScript dependencies are bundled: one module graph of a few files instead of hundreds to resolve,
    // read and (for CommonJS) scan for exports at every start. Splitting keeps each dynamic import() a chunk of its
    // own, so what serve does not need (doctor, diagrams, AEP and its workers) is not even parsed.
    splitting: true,
    external: EXTERNAL,
    plugins: [sqliteOnlyKnex],
    // Bundled CommonJS calls require() for Node's built-ins and the packages above; an ES module has none.
    banner: {
      js: 'import { createRequire as __byokRequire } from "node:module";\nconst require = __byokRequire(import.meta.url);',
    },
    // Less to parse at every start; identifiers stay readable, and the source map restores lines and names.
    minifyWhitespace: true,
    minifySyntax: true,
    // Stack traces name the TypeScript sources (with node --enable-source-maps).
    sourcemap: true,
    // The sources sit beside the bundle in every install; the map only points at them.
    sourcesContent: false,
    metafile: true,
    logLevel: "warning",
  });
  await removeStale(outdir, new Set(Object.keys(result.metafile.outputs).map((file) => basename(file))));
}

/**
 * How long a chunk of an earlier build outlives it: a gateway started from that build (`npm start` while `npm ci`,
 * `npm test` or the bench rebuilds) still loads chunks on demand, and a chunk deleted under it would fail that load.
 */
export const STALE_CHUNK_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * Removes the files of earlier builds not written for a day: chunk names carry a content hash, so a changed chunk
 * leaves its old file behind, and this build's own files are `current`.
 */
export async function removeStale(outdir: string, current: ReadonlySet<string>, now = Date.now()): Promise<void> {
  const stale = (await readdir(outdir)).filter((file) => !current.has(file));
  await Promise.all(
    stale.map(async (file) => {
      const path = join(outdir, file);
      // Gone already when another build (npm test and the bench at once) removed it first.
      const written = (await stat(path).catch(() => undefined))?.mtimeMs ?? now;
      if (now - written > STALE_CHUNK_GRACE_MS) await rm(path, { force: true });
    }),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildDist();
