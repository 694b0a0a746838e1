import { expect } from "chai";
import { offeredTools, WORKSPACE_WRITERS } from "../../cursor/tools/mode-tools.js";
import { toolDriver } from "../../cursor/tools/registry.js";
import { loadPromptAssets, MODE_IDS } from "../../prompt/assets.js";

const assets = loadPromptAssets();
const offered = (mode: (typeof MODE_IDS)[number]) =>
  offeredTools(mode, assets.modes.get(mode)!.tools).map((t) => t.name);

/**
 * Catalog tools that no driver serves yet, so no mode offers them. Other pieces of work build them; each one that
 * lands leaves this list (Task belongs to the subagent work; see docs/protocol/cursor-tools.md §6.4).
 */
const WITHOUT_DRIVER = ["Task"];

describe("mode tools: what each mode offers the model", () => {
  it("lists the catalog tools that still lack a driver", () => {
    const missing = [...assets.catalog.keys()].filter((name) => toolDriver(name) === undefined);
    expect(missing).to.deep.equal(WITHOUT_DRIVER);
  });

  it("offers each mode's manifest in its order, without tools that have no driver", () => {
    expect(offered("agent")).to.deep.equal([
      ...["Shell", "AwaitShell", "Grep", "Delete", "WebSearch", "WebFetch", "GenerateImage", "EditNotebook"],
      ...["TodoWrite", "StrReplace", "Write", "Read", "ReadLints", "Glob", "AskQuestion", "GetMcpTools"],
      ...["FetchMcpResource", "SwitchMode", "CallMcpTool", "Ls", "UpdateCurrentStep"],
    ]);
    expect(offered("debug")).to.deep.equal([
      ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
      ...["StrReplace", "TodoWrite", "WebFetch", "WebSearch", "Write"],
    ]);
    expect(offered("multitask")).to.deep.equal([
      ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
      ...["StrReplace", "SwitchMode", "TodoWrite", "WebFetch", "WebSearch", "Write", "GenerateImage"],
    ]);
  });

  it("never offers a file-writing tool in ask or plan, even when the manifest lists it", () => {
    const askManifest = assets.modes.get("ask")!.tools.map((t) => t.name);
    expect(askManifest).to.include.members(["Write", "StrReplace", "Delete"]);
    expect(offered("ask")).to.deep.equal([
      ...["AskQuestion", "CallMcpTool", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
      ...["TodoWrite", "WebFetch", "WebSearch"],
    ]);
    expect(offered("plan")).to.deep.equal([
      ...["Shell", "Glob", "Grep", "Read", "TodoWrite", "ReadLints", "WebSearch", "WebFetch", "AskQuestion"],
      ...["CreatePlan", "FetchMcpResource", "CallMcpTool"],
    ]);
    for (const mode of ["ask", "plan"] as const) {
      for (const writer of WORKSPACE_WRITERS) expect(offered(mode), `${mode} ${writer}`).to.not.include(writer);
    }
  });

  it("offers file-writing tools in agent, debug and multitask only", () => {
    const writers = MODE_IDS.filter((m) => offered(m).some((t) => WORKSPACE_WRITERS.has(t)));
    expect(writers).to.deep.equal(["agent", "debug", "multitask"]);
  });

  it("offers CreatePlan only in plan mode and SwitchMode only where the captures have it", () => {
    expect(MODE_IDS.filter((m) => offered(m).includes("CreatePlan"))).to.deep.equal(["plan"]);
    expect(MODE_IDS.filter((m) => offered(m).includes("SwitchMode"))).to.deep.equal(["agent", "multitask"]);
  });
});
