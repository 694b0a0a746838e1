// The mode a run is in (docs/protocol/cursor-tools.md §6.4–§6.5): the mode it started in gives the run its system
// prompt; the current one — moved by an approved SwitchMode — gives the tools the next model call is offered and
// the mode every checkpoint records.
import type { AgentMode, AgentRunRequest, McpToolDefinition, RequestContext } from "../proto/gen/agent/v1/agent_pb.js";
import { mcpContext } from "../cursor/request-context.js";
import { modeToWire } from "../cursor/modes.js";
import { offeredTools } from "../cursor/tools/mode-tools.js";
import type { ModeSwitch } from "../cursor/tools/types.js";
import type { ModeAssets, ModeId, PromptAssets, ToolDefinition } from "../prompt/assets.js";

export class RunMode {
  current!: ModeId;
  tools!: ToolDefinition[];
  /** The offered tools as the provider request carries them, for the context breakdown. */
  toolDefinitionsJson!: string;

  /** `extraTools` follow the mode's own in every mode (the MCP tools the client announced). */
  constructor(
    private readonly assets: PromptAssets,
    readonly started: ModeAssets,
    private readonly extraTools: readonly ToolDefinition[] = [],
  ) {
    this.current = started.mode;
    this.setTools(started.tools);
  }

  /** Moves the run to `id`; what the machines need to offer the next model call. */
  switchTo(id: ModeId): ModeSwitch {
    this.current = id;
    this.setTools(this.assets.modes.get(id)!.tools);
    return { id, toolNames: this.tools.map((t) => t.name) };
  }

  /** A mode's manifest as offered (with a driver; no writers in the read-only modes), then the extra tools. The run
   * starts with its started mode's own list, which a subagent's run derives (prompt/subagent-tools.ts). */
  private setTools(manifest: readonly ToolDefinition[]): void {
    this.tools = [...offeredTools(this.current, manifest), ...this.extraTools];
    this.toolDefinitionsJson = JSON.stringify(this.tools);
  }

  get wire(): AgentMode {
    return modeToWire(this.current);
  }
}

/**
 * The MCP tools the client announced: the run request's `mcp_tools`, else those of its request context (inline or
 * from its MCP part), where Cursor puts them when the top-level list is absent (cursor-tools.md §5.15).
 */
export function announcedMcpTools(request: AgentRunRequest, ctx: RequestContext | undefined): McpToolDefinition[] {
  const top = request.mcpTools?.mcpTools ?? [];
  return top.length ? top : mcpContext(ctx).tools;
}
