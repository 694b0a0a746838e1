import { expect } from "chai";
import { offeredTools, WORKSPACE_WRITERS } from "../../cursor/tools/mode-tools.js";
import { toolDriver } from "../../cursor/tools/registry.js";
import { loadPromptAssets, MODE_IDS } from "../../prompt/assets.js";

const assets = loadPromptAssets();
const offered = (mode: (typeof MODE_IDS)[number]) =>
  offeredTools(mode, assets.modes.get(mode)!.tools).map((t) => t.name);

describe("mode tools: what each mode offers the model", () => {
  it("has a driver for every catalog tool", () => {
    const missing = [...assets.catalog.keys()].filter((name) => toolDriver(name) === undefined);
    expect(missing).to.deep.equal([]);
  });

  it("offers each mode's manifest in its order, without tools that have no driver", () => {
    expect(offered("agent")).to.deep.equal([
      ...["Shell", "AwaitShell", "Grep", "Delete", "WebSearch", "WebFetch", "GenerateImage", "EditNotebook"],
      ...["TodoWrite", "StrReplace", "Write", "Read", "ReadLints", "Glob", "AskQuestion", "Task", "GetMcpTools"],
      ...["FetchMcpResource", "SwitchMode", "CallMcpTool", "Ls"],
    ]);
    expect(offered("debug")).to.deep.equal([
      ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
      ...["StrReplace", "Task", "TodoWrite", "WebFetch", "WebSearch", "Write"],
    ]);
    expect(offered("multitask")).to.deep.equal([
      ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
      ...["StrReplace", "SwitchMode", "Task", "TodoWrite", "WebFetch", "WebSearch", "Write", "GenerateImage"],
    ]);
  });

  it("never offers a file-writing tool in ask or plan, even when the manifest lists it", () => {
    const askManifest = assets.modes.get("ask")!.tools.map((t) => t.name);
    expect(askManifest).to.include.members(["Write", "StrReplace", "Delete"]);
    expect(offered("ask")).to.deep.equal([
      ...["AskQuestion", "CallMcpTool", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell", "Task"],
      ...["TodoWrite", "WebFetch", "WebSearch"],
    ]);
    expect(offered("plan")).to.deep.equal([
      ...["Shell", "Glob", "Grep", "Read", "TodoWrite", "ReadLints", "WebSearch", "WebFetch", "AskQuestion"],
      ...["CreatePlan", "Task", "FetchMcpResource", "CallMcpTool"],
    ]);
    for (const mode of ["ask", "plan"] as const) {
      for (const writer of WORKSPACE_WRITERS) expect(offered(mode), `${mode} ${writer}`).to.not.include(writer);
    }
  });

  it("offers file-writing tools in agent, debug, multitask and a subagent's runs only", () => {
    const writers = MODE_IDS.filter((m) => offered(m).some((t) => WORKSPACE_WRITERS.has(t)));
    expect(writers).to.deep.equal(["agent", "debug", "multitask", "subagent"]);
  });

  it("offers CreatePlan only in plan mode and SwitchMode only where the captures have it", () => {
    expect(MODE_IDS.filter((m) => offered(m).includes("CreatePlan"))).to.deep.equal(["plan"]);
    expect(MODE_IDS.filter((m) => offered(m).includes("SwitchMode"))).to.deep.equal(["agent", "multitask", "subagent"]);
  });
});
