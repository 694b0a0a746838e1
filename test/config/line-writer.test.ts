// log/line-writer.ts: a line leaves at once after a quiet window, a burst leaves in one write per window, in order,
// and nothing held is lost when the process exits or the CLI writes its last words.
import { spawnSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { coalescingWriter } from "../../log/line-writer.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Runs `code` as an ES module in a fresh node (tsx for the project's sources) and returns its stderr. */
function stderrOf(code: string): string {
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    cwd: root,
    encoding: "utf8",
  });
  return run.stderr;
}

describe("log lines on stderr (log/line-writer.ts)", () => {
  it("writes a line at once, holds the lines after it for the window, then writes them together", async () => {
    const writes: string[] = [];
    const lines = coalescingWriter({ write: (text: string) => writes.push(text) }, 20);
    lines.write("a\n");
    expect(writes).to.deep.equal(["a\n"]);
    lines.write("b\n");
    lines.write("c\n");
    expect(writes).to.deep.equal(["a\n"]);
    await sleep(30);
    expect(writes).to.deep.equal(["a\n", "b\nc\n"]);
    // The window that wrote b and c gathers nothing more and closes: the next line leaves at once.
    await sleep(30);
    lines.write("d\n");
    expect(writes).to.deep.equal(["a\n", "b\nc\n", "d\n"]);
  });

  it("flush writes what is held at once, in order", () => {
    const writes: string[] = [];
    const lines = coalescingWriter({ write: (text: string) => writes.push(text) }, 1_000);
    for (const l of ["a\n", "b\n", "c\n"]) lines.write(l);
    lines.flush();
    lines.flush();
    expect(writes).to.deep.equal(["a\n", "b\nc\n"]);
  });

  it("a burst logged just before process.exit reaches stderr whole and in order", () => {
    const stderr = stderrOf(`
      import { createLogger } from ${JSON.stringify(`${root}log/logger.ts`)};
      const log = createLogger();
      for (let i = 0; i < 50; i++) log.info("line", { i });
      process.exit(3);
    `);
    const seen = stderr
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { i: number }).i);
    expect(seen).to.deep.equal([...Array(50).keys()]);
  });

  it("the CLI's own last message comes after the lines logged before it", () => {
    const stderr = stderrOf(`
      import { createLogger } from ${JSON.stringify(`${root}log/logger.ts`)};
      import { flushHeldLines } from ${JSON.stringify(`${root}log/line-writer.ts`)};
      const log = createLogger();
      for (let i = 0; i < 3; i++) log.info("line", { i });
      flushHeldLines();
      process.stderr.write("byok: failed\\n");
      process.exit(1);
    `);
    const lines = stderr.trim().split("\n");
    expect(lines).to.have.length(4);
    expect(lines.at(-1)).to.equal("byok: failed");
  });
});
