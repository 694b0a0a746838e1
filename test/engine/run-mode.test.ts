import { expect } from "chai";
import { RunMode } from "../../engine/run-mode.js";
import { offeredTools } from "../../cursor/tools/mode-tools.js";
import { loadPromptAssets, type ToolDefinition } from "../../prompt/assets.js";

describe("RunMode: the offered tools (docs/protocol/cursor-tools.md §6.4–§6.5)", () => {
  const assets = loadPromptAssets();
  const agent = assets.modes.get("agent")!;
  const extra: ToolDefinition = { name: "mcp_fs_read", description: "d", parameters: { type: "object" } };

  it("offers the mode's list, serialized as the provider request carries it, shared by the runs that add nothing", () => {
    const a = new RunMode(assets, agent);
    const b = new RunMode(assets, agent);
    expect(a.tools).to.deep.equal(offeredTools("agent", agent.tools));
    expect(a.toolDefinitionsJson).to.equal(JSON.stringify(a.tools));
    expect(b.tools).to.equal(a.tools);
    expect(Object.isFrozen(a.tools)).to.equal(true);
  });

  it("adds a run's extra tools after the mode's own, in every mode it switches to", () => {
    const run = new RunMode(assets, agent, [extra]);
    expect(run.tools).to.deep.equal([...offeredTools("agent", agent.tools), extra]);
    expect(run.toolDefinitionsJson).to.equal(JSON.stringify(run.tools));
    run.switchTo("ask");
    const ask = assets.modes.get("ask")!.tools;
    expect(run.tools).to.deep.equal([...offeredTools("ask", ask), extra]);
    expect(run.toolDefinitionsJson).to.equal(JSON.stringify(run.tools));
    expect(new RunMode(assets, agent).tools).to.not.include(extra);
  });

  it("switches to another mode's list and JSON, and back to the shared one", () => {
    const run = new RunMode(assets, agent);
    const shared = run.tools;
    run.switchTo("plan");
    expect(run.tools).to.deep.equal(offeredTools("plan", assets.modes.get("plan")!.tools));
    expect(run.toolDefinitionsJson).to.equal(JSON.stringify(run.tools));
    run.switchTo("agent");
    expect(run.tools).to.equal(shared);
  });
});
