import { expect } from "chai";
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeStale, STALE_CHUNK_GRACE_MS } from "../../scripts/build.js";

describe("build: chunks of earlier builds", () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "byok-dist-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps this build's files and an earlier build's for a day, so a gateway started from it can still load them", async () => {
    const now = Date.now();
    const files = [
      "byok.js",
      "chunk-NEW.js",
      "chunk-RECENT.js",
      "chunk-RECENT.js.map",
      "chunk-OLD.js",
      "chunk-OLD.js.map",
    ];
    for (const file of files) writeFileSync(join(dir, file), "");
    const dayAndAMinuteAgo = (now - STALE_CHUNK_GRACE_MS - 60_000) / 1000;
    for (const file of ["chunk-OLD.js", "chunk-OLD.js.map"])
      utimesSync(join(dir, file), dayAndAMinuteAgo, dayAndAMinuteAgo);
    // The entry is rewritten by every build; an hour-old earlier chunk is still within the grace.
    utimesSync(join(dir, "chunk-RECENT.js"), (now - 3_600_000) / 1000, (now - 3_600_000) / 1000);

    await removeStale(dir, new Set(["byok.js", "chunk-NEW.js"]), now);

    expect(files.filter((file) => existsSync(join(dir, file)))).to.deep.equal([
      "byok.js",
      "chunk-NEW.js",
      "chunk-RECENT.js",
      "chunk-RECENT.js.map",
    ]);
  });
});
