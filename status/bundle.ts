// The page's script and style, bundled from status/page/ with esbuild on the first request and kept in memory: no
// build step before `npm start` or `npm test`, nothing generated in the repository to drift, and no request leaves
// the machine (the lifecycle diagram is bundled in as text).
import { fileURLToPath } from "node:url";

export interface PageBundle {
  js: string;
  css: string;
}

// Written from one folder below the root, so it names the same file from the sources and from the dist/ bundle.
const ENTRY = fileURLToPath(new URL("../status/page/main.ts", import.meta.url));
let built: Promise<PageBundle> | undefined;

/** The bundle, built once; a failed build is tried again on the next request. */
export function pageBundle(): Promise<PageBundle> {
  built ??= buildPage().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}

async function buildPage(): Promise<PageBundle> {
  // Loaded on the first page request only: a gateway nobody looks at never starts esbuild.
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    outdir: "bundle",
    format: "iife",
    target: "es2022",
    minify: true,
    legalComments: "none",
    loader: { ".svg": "text" },
    logLevel: "silent",
  });
  const text = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? "";
  return { js: text(".js"), css: text(".css") };
}
