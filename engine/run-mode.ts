// The mode a run is in (docs/protocol/cursor-tools.md §6.4–§6.5): the mode it started in gives the run its system
// prompt; the current one — moved by an approved SwitchMode — gives the tools the next model call is offered and
// the mode every checkpoint records.
import type { AgentMode, AgentRunRequest, McpToolDefinition, RequestContext } from "../proto/gen/agent/v1/agent_pb.js";
import { mcpContext } from "../cursor/request-context.js";
import { modeToWire } from "../cursor/modes.js";
import { offeredTools } from "../cursor/tools/mode-tools.js";
import { mcpToolsForRun } from "../cursor/tools/mcp-tools.js";
import type { ModeSwitch, ToolContext } from "../cursor/tools/types.js";
import type { PreparedRun } from "../machines/run.js";
import type { ParentLink } from "../transport/agent-backend.js";
import { runMode, subagentSettings } from "./run-subagent.js";
import type { RunRequestFacts } from "./run-setup.js";
import type { ModeAssets, ModeId, PromptAssets, ToolDefinition } from "../prompt/assets.js";

/** A mode's offered list and its JSON, shared by the runs that add no tools of their own. */
interface OfferedTools {
  tools: readonly ToolDefinition[];
  json: string;
}

/** Per manifest (loaded once) and mode: every run re-filtered and re-serialized tens of KiB of tool definitions. */
const offeredLists = new WeakMap<readonly ToolDefinition[], Map<ModeId, OfferedTools>>();

function offeredList(mode: ModeId, manifest: readonly ToolDefinition[]): OfferedTools {
  let byMode = offeredLists.get(manifest);
  if (!byMode) {
    byMode = new Map();
    offeredLists.set(manifest, byMode);
  }
  let offered = byMode.get(mode);
  if (!offered) {
    const tools = Object.freeze(offeredTools(mode, manifest));
    offered = { tools, json: JSON.stringify(tools) };
    byMode.set(mode, offered);
  }
  return offered;
}

export class RunMode {
  current!: ModeId;
  tools!: readonly ToolDefinition[];
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
    const offered = offeredList(this.current, manifest);
    if (this.extraTools.length) {
      this.tools = [...offered.tools, ...this.extraTools];
      this.toolDefinitionsJson = JSON.stringify(this.tools);
    } else {
      this.tools = offered.tools;
      this.toolDefinitionsJson = offered.json;
    }
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

/**
 * The run's mode and what its tool calls need from the run: the mode's offered tools, then the MCP tools the client
 * announced, whatever the mode (docs/protocol/cursor-tools.md §5.15, §6); a subagent's run gets its own tool set.
 */
export function runTools(
  assets: PromptAssets,
  facts: RunRequestFacts,
  request: AgentRunRequest,
  parent: ParentLink | undefined,
): { mode: RunMode; prepared: PreparedRun } {
  const ctx = facts.requestContext;
  const mcp = mcpToolsForRun(announcedMcpTools(request, ctx));
  const mode = new RunMode(assets, runMode(assets, facts, request, parent), mcp.tools);
  const toolContext: ToolContext = {
    conversationId: facts.conversationId,
    mode: mode.current,
    ...(ctx?.env?.terminalsFolder ? { terminalsFolder: ctx.env.terminalsFolder } : {}),
    ...(mcp.catalog.byServerTool.size ? { mcp: mcp.catalog } : {}),
    ...(ctx?.adminCommandDenylist.length ? { adminCommandDenylist: [...ctx.adminCommandDenylist] } : {}),
    subagents: subagentSettings(request),
  };
  return { mode, prepared: { toolNames: mode.tools.map((t) => t.name), toolContext } };
}
