// The tool registry (docs/protocol/cursor-tools.md §1.2, §2): one model tool name → exactly one driver, hence one
// transport. An unknown name has no driver; the caller reports it as a protocol error, with no fallback transport.
import { askQuestionDriver } from "./ask-question.js";
import { awaitShellDriver } from "./await-shell.js";
import { createPlanDriver } from "./create-plan.js";
import { deleteDriver } from "./delete.js";
import { editNotebookDriver, strReplaceDriver, writeDriver } from "./edit.js";
import { globDriver } from "./glob.js";
import { grepDriver } from "./grep.js";
import { lsDriver } from "./ls.js";
import { callMcpToolDriver, mcpToolDriver } from "./mcp-call.js";
import { fetchMcpResourceDriver } from "./mcp-resource.js";
import { getMcpToolsDriver } from "./mcp-state.js";
import { MCP_TOOL_PREFIX } from "./mcp-tools.js";
import { generateImageDriver } from "./generate-image.js";
import { webSearchDriver } from "./web-search.js";
import { readDriver } from "./read.js";
import { readLintsDriver } from "./read-lints.js";
import { shellDriver } from "./shell.js";
import { switchModeDriver } from "./switch-mode.js";
import { taskDriver } from "./task.js";
import { todoWriteDriver } from "./todo-write.js";
import type { ToolDriver } from "./types.js";
import { updateCurrentStepDriver } from "./update-current-step.js";
import { webFetchDriver } from "./web-fetch.js";

export { isBackgroundedShell } from "./shell.js";

const drivers: readonly ToolDriver[] = [
  readDriver,
  grepDriver,
  globDriver,
  lsDriver,
  shellDriver,
  awaitShellDriver,
  writeDriver,
  strReplaceDriver,
  askQuestionDriver,
  callMcpToolDriver,
  fetchMcpResourceDriver,
  getMcpToolsDriver,
  webSearchDriver,
  generateImageDriver,
  createPlanDriver,
  switchModeDriver,
  deleteDriver,
  readLintsDriver,
  editNotebookDriver,
  webFetchDriver,
  todoWriteDriver,
  updateCurrentStepDriver,
  taskDriver,
];

const byName = new Map<string, ToolDriver>(drivers.map((d) => [d.name, d]));

export const toolNames: readonly string[] = drivers.map((d) => d.name);

/** The MCP tools offered under their own names (`mcp__…`) share one driver (docs/protocol/cursor-tools.md §5.15). */
export function toolDriver(name: string): ToolDriver | undefined {
  return byName.get(name) ?? (name.startsWith(MCP_TOOL_PREFIX) ? (mcpToolDriver as ToolDriver) : undefined);
}
