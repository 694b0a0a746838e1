import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LIFECYCLE_DIR, lifecycles, renderDiagrams } from "../../docs/lifecycle/generate.js";

describe("lifecycle diagrams (docs/lifecycle)", () => {
  it("are committed exactly as the current machines generate them (run `npm run diagrams`)", async () => {
    const files = await renderDiagrams();
    expect(files.size).to.equal(lifecycles.length * 2 + 1);
    for (const [name, contents] of files) {
      const committed = readFileSync(join(LIFECYCLE_DIR, name), "utf8");
      expect(committed, `${name} is stale: run npm run diagrams`).to.equal(contents);
    }
  });

  it("draw every state of every machine", async () => {
    const files = await renderDiagrams();
    for (const { name, machine } of lifecycles) {
      const mmd = files.get(`${name}.mmd`)!;
      const walk = (node: typeof machine.root): string[] => [
        node.key,
        ...Object.values(node.states).flatMap((c) => walk(c)),
      ];
      for (const key of walk(machine.root).slice(1))
        expect(mmd, `${name} lacks state ${key}`).to.include(`state "${key}"`);
    }
  });
});
