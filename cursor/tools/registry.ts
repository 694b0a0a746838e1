// The tool registry (docs/protocol/cursor-tools.md §1.2, §2): one model tool name → exactly one driver, hence one
// transport. An unknown name has no driver; the caller reports it as a protocol error, with no fallback transport.
import { askQuestionDriver } from "./ask-question.js";
import { strReplaceDriver, writeDriver } from "./edit.js";
import { globDriver } from "./glob.js";
import { grepDriver } from "./grep.js";
import { lsDriver } from "./ls.js";
import { readDriver } from "./read.js";
import { shellDriver } from "./shell.js";
import { taskDriver } from "./task.js";
import type { ToolDriver } from "./types.js";

export { isBackgroundedShell } from "./shell.js";

const drivers: readonly ToolDriver[] = [
  readDriver,
  grepDriver,
  globDriver,
  lsDriver,
  shellDriver,
  writeDriver,
  strReplaceDriver,
  askQuestionDriver,
  taskDriver,
];

const byName = new Map<string, ToolDriver>(drivers.map((d) => [d.name, d]));

export const toolNames: readonly string[] = drivers.map((d) => d.name);

export function toolDriver(name: string): ToolDriver | undefined {
  return byName.get(name);
}
