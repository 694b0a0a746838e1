// Which of a mode's tools the model is offered (docs/protocol/cursor-tools.md §6.4). The manifest is the mode's
// captured list; the registry narrows it: a tool without a driver is not offered, and the read-only modes are never
// offered a tool that changes workspace files, whatever their manifest says. A call to a tool that is not offered is
// refused exactly like a call to an unknown tool (a protocol error, docs/protocol/cursor-tools.md §1.2).
import type { ModeId, ToolDefinition } from "../../prompt/assets.js";
import { toolDriver } from "./registry.js";

/** Tools that write or delete workspace files. Shell is not among them: see READ_ONLY_MODES. */
export const WORKSPACE_WRITERS: ReadonlySet<string> = new Set([
  "Write",
  "StrReplace",
  "Delete",
  "EditNotebook",
  "GenerateImage",
]);

/**
 * Ask answers and Plan plans: neither changes a file. Shell stays offered to both (the captured lists have it):
 * reading git history or running a test is part of answering, and the client asks the user before a command it
 * does not consider safe. The prompts tell the model not to write through Shell.
 */
export const READ_ONLY_MODES: ReadonlySet<ModeId> = new Set(["ask", "plan"]);

export function offeredTools(mode: ModeId, manifest: readonly ToolDefinition[]): ToolDefinition[] {
  const readOnly = READ_ONLY_MODES.has(mode);
  return manifest.filter((t) => toolDriver(t.name) !== undefined && !(readOnly && WORKSPACE_WRITERS.has(t.name)));
}
