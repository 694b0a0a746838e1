import { expect } from "chai";
import { loadPromptAssets, type PromptAssets, type ToolDefinition } from "../../prompt/assets.js";
import { subagentMode } from "../../prompt/subagent-tools.js";

const assets = loadPromptAssets();
const tool = (name: string): ToolDefinition =>
  assets.catalog.get(name) ?? { name, description: `${name} (test)`, parameters: { type: "object", properties: {} } };

/** The loaded assets with the subagent manifest (and the catalog) replaced by `names`. */
function withManifest(names: string[]): PromptAssets {
  const subagent = { ...assets.modes.get("subagent")!, tools: names.map(tool) };
  const catalog = new Map([...assets.catalog, ["UpdateCurrentStep", tool("UpdateCurrentStep")]]);
  return { ...assets, catalog, modes: new Map([...assets.modes, ["subagent", subagent]]) };
}
const names = (a: PromptAssets, suppressProgressTool: boolean, runnable = (_: string) => true) =>
  subagentMode(a, { suppressProgressTool, runnable }).tools.map((t) => t.name);

describe("subagent tool set", () => {
  it("drops AskQuestion, keeps the manifest's order and UpdateCurrentStep's place, adds it when missing", () => {
    const listed = withManifest(["AskQuestion", "Read", "UpdateCurrentStep", "Task"]);
    expect(names(listed, false)).to.deep.equal(["Read", "UpdateCurrentStep", "Task"]);
    expect(names(withManifest(["Read", "Task"]), false)).to.deep.equal(["Read", "Task", "UpdateCurrentStep"]);
  });

  it("removes UpdateCurrentStep when the run request suppresses it, and every tool without a driver", () => {
    const listed = withManifest(["Read", "UpdateCurrentStep", "Shell", "Task"]);
    expect(names(listed, true)).to.deep.equal(["Read", "Shell", "Task"]);
    expect(names(listed, false, (n) => n !== "Shell")).to.deep.equal(["Read", "UpdateCurrentStep", "Task"]);
  });

  it("offers Task without its cloud parameters and the agent's system prompt", () => {
    const mode = subagentMode(assets, { suppressProgressTool: false, runnable: () => true });
    const task = mode.tools.find((t) => t.name === "Task")!;
    const keys = Object.keys(task.parameters.properties as object);
    expect(keys).to.not.include.members(["environment", "cloud_base_branch"]);
    expect(keys).to.include.members(["description", "prompt", "subagent_type", "run_in_background", "model"]);
    expect(Object.keys(assets.catalog.get("Task")!.parameters.properties as object)).to.include("environment");
    expect(mode.systemPrompt).to.equal(assets.modes.get("agent")!.systemPrompt);
  });
});
