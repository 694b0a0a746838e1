// The subagent tool set (docs/protocol/cursor-tools.md §6.3), derived from the one catalog and the subagent
// manifest rather than kept as a second copy: the manifest without AskQuestion, Task in its subagent variant (no
// environment or cloud branch), and UpdateCurrentStep unless the run request suppresses it.
import type { ModeAssets, PromptAssets, ToolDefinition } from "./assets.js";

/** Parameters a subagent's Task does not have: subagents start only local children. */
const CLOUD_ONLY = new Set(["environment", "cloud_base_branch"]);
const PROGRESS_TOOL = "UpdateCurrentStep";

function taskForSubagents(task: ToolDefinition): ToolDefinition {
  const properties = (task.parameters.properties ?? {}) as Record<string, unknown>;
  const kept = Object.fromEntries(Object.entries(properties).filter(([name]) => !CLOUD_ONLY.has(name)));
  return { ...task, parameters: { ...task.parameters, properties: kept } };
}

export interface SubagentToolOptions {
  /** The run request's suppress_subagent_progress_update_tool. */
  suppressProgressTool: boolean;
  /** Whether a tool can run here at all (it has a driver); others are not offered. */
  runnable(name: string): boolean;
}

/** The subagent mode's assets with the derived tool list. */
export function subagentMode(assets: PromptAssets, opts: SubagentToolOptions): ModeAssets {
  const mode = assets.modes.get("subagent")!;
  const progress = assets.catalog.get(PROGRESS_TOOL);
  const dropped = (name: string) => name === "AskQuestion" || (opts.suppressProgressTool && name === PROGRESS_TOOL);
  const listed = mode.tools.filter((t) => !dropped(t.name));
  const missingProgress = progress && !opts.suppressProgressTool && !listed.some((t) => t.name === PROGRESS_TOOL);
  const tools = [...listed, ...(missingProgress ? [progress] : [])]
    .filter((t) => opts.runnable(t.name))
    .map((t) => (t.name === "Task" ? taskForSubagents(t) : t));
  return { ...mode, tools };
}
