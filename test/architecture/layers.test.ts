// The import directions of README "Layout", checked on the real tree with dependency-cruiser's own rules
// (.dependency-cruiser.cjs), plus the one rule it has no switch for: no cycle between folders.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const config = fileURLToPath(new URL("../../.dependency-cruiser.cjs", import.meta.url));
const SOURCE_FOLDERS = [
  "bin",
  "engine",
  "machines",
  "cursor",
  "transport",
  "aep",
  "workers",
  "store",
  "providers",
  "prompt",
  "log",
  "messages-api",
  "status",
];

interface Cruise {
  modules: Array<{ source: string; dependencies: Array<{ resolved: string; coreModule: boolean }> }>;
  summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> };
}

async function cruise(cwd: string, folders: string[]): Promise<Cruise> {
  const bin = fileURLToPath(new URL("../../node_modules/.bin/depcruise", import.meta.url));
  const args = ["--config", config, "--output-type", "json", ...folders];
  // depcruise exits non-zero when it finds violations; the JSON report is on stdout either way.
  const out = await run(bin, args, { cwd, maxBuffer: 64 * 1024 * 1024 }).catch((e: { stdout?: string }) => e);
  return JSON.parse(String(out.stdout)) as Cruise;
}

const within = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/**
 * Folder → folders it imports from (a file's folder is its directory), then any cycle among them. A folder and its
 * own subfolders are one unit (workers/ registers workers/claude-code/, which speaks workers/types.ts).
 */
function folderCycle(edges: Array<[from: string, to: string]>): string[] | undefined {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of edges) if (!within(from, to)) graph.set(from, (graph.get(from) ?? new Set()).add(to));
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === "done") return undefined;
    if (state.get(node) === "open") return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

const folderOf = (path: string) => path.slice(0, path.lastIndexOf("/"));

describe("architecture: import directions", function () {
  this.timeout(60_000);

  it("the source tree breaks none of the layer rules", async () => {
    const result = await cruise(root, SOURCE_FOLDERS);
    expect(result.modules.length).to.be.greaterThan(100);
    expect(result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).to.deep.equal([]);
  });

  it("has no cycle between folders", async () => {
    const result = await cruise(root, SOURCE_FOLDERS);
    const edges = result.modules.flatMap((m) =>
      m.dependencies
        .filter((d) => !d.coreModule && SOURCE_FOLDERS.some((f) => d.resolved.startsWith(`${f}/`)))
        .map((d): [string, string] => [folderOf(m.source), folderOf(d.resolved)]),
    );
    expect(edges.length).to.be.greaterThan(100);
    expect(folderCycle(edges)).to.equal(undefined);
  });

  it("the rules bite: a machine importing the store is reported", async () => {
    const result = await cruise(fileURLToPath(new URL("./fixtures/", import.meta.url)), ["machines", "store"]);
    expect(result.summary.violations.map((v) => v.rule.name)).to.deep.equal(["machines-pure"]);
  });

  it("the folder check bites: a two-folder loop is a cycle", () => {
    expect(
      folderCycle([
        ["a", "b"],
        ["b", "c"],
        ["c", "a"],
      ]),
    ).to.deep.equal(["a", "b", "c", "a"]);
    expect(
      folderCycle([
        ["a", "b"],
        ["a", "c"],
        ["b", "c"],
      ]),
    ).to.equal(undefined);
  });
});
