// Registered in .mocharc.json, so `npm test` checks that the tests leave nothing in the system temp dir. Before
// any test file loads, TMPDIR points at one fresh directory per run (`byok-test-…`): os.tmpdir() in this process
// and in every child that inherits the environment (gateways, the Claude Code CLI, the bench) then creates its
// temporary files there. After the run, anything still inside fails the run, listed by name (the tests that made
// it are the ones to fix), and the run directory is removed either way. Judging only our own directory keeps other
// processes that share the system temp dir out of the verdict.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const systemTemp = tmpdir();
const runDir = mkdtempSync(join(systemTemp, "byok-test-"));
process.env.TMPDIR = runDir;

/** tsx keeps its compile cache in the temp dir on purpose (`tsx-<uid>`); it goes with the run directory. */
const isTsxCache = (name: string) => /^tsx-\d+$/.test(name);

export function mochaGlobalTeardown(): void {
  const left = readdirSync(runDir).filter((name) => !isTsxCache(name));
  process.env.TMPDIR = systemTemp;
  rmSync(runDir, { recursive: true, force: true });
  if (left.length > 0)
    throw new Error(`the tests left ${left.length} entries in the temp dir, not cleaned up: ${left.join(", ")}`);
}
