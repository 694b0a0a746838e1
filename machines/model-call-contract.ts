// The ModelCall's pure core (docs/protocol/cursor-run.md §7.3, §9; docs/protocol/cursor-tools.md §2): its context,
// the next context for one ModelEvent with the frames it makes visible, and the call's output. The machine
// (model-call.ts) decides when each applies.
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalToolCall } from "../providers/messages.js";
import type { ModelEvent, ReplayState, Usage } from "../providers/types.js";
import { frames } from "../cursor/frames.js";
import { MCP_TOOL_PREFIX } from "../cursor/tools/mcp-tools.js";
import { toolDriver } from "../cursor/tools/registry.js";
import type { ToolInvocation } from "../cursor/tools/types.js";

export interface ModelCallInput {
  callIndex: number;
  modelCallId: string;
  /** Tool names offered in this run's manifest; anything else is a protocol error. */
  toolNames: readonly string[];
  /** A summary call (docs/protocol/cursor-run.md §8.10) streams nothing to the client: its text becomes the
   * summary update once the call is done. Absent for the run's ordinary answer calls. */
  purpose?: "summary";
}

export interface OpenToolCall {
  id: string;
  name: string;
  argsText: string;
  ended: boolean;
}

/** `stopped`: the run asked the pass to end (cancel, or a failure found outside the pass). */
export type Failure = { kind: "provider" | "protocol" | "stopped"; message: string };

export interface ModelCallContext extends ModelCallInput {
  text: string;
  thinking: string | undefined;
  thinkingStartedAt: number | undefined;
  thinkingMs: number;
  textOpen: boolean;
  tools: ReadonlyMap<number, OpenToolCall>;
  usage: Usage | undefined;
  replay: ReplayState | undefined;
  doneReason: "stop" | "toolUse" | undefined;
  failure: Failure | undefined;
}

export interface AssistantTurn {
  text: string;
  thinking?: string;
  thinkingDurationMs?: number;
  replay?: ReplayState;
  toolCalls: CanonicalToolCall[];
}

export type ModelCallOutput =
  | {
      ok: true;
      reason: "stop" | "toolUse";
      assistant: AssistantTurn;
      invocations: ToolInvocation[];
      usage: Usage | undefined;
    }
  | { ok: false; failure: Failure; usage: Usage | undefined };

export type Patch = Partial<ModelCallContext>;

/** Pure core of the pass: the next context for one ModelEvent, plus the frames it makes visible. */
export function applyModelEvent(
  ctx: ModelCallContext,
  ev: ModelEvent,
  emitFrame: (m: AgentServerMessage) => void,
): Patch {
  const fail = (kind: Failure["kind"], message: string): Patch => ({ failure: { kind, message } });
  switch (ev.type) {
    case "start":
      return {};
    case "text_start":
      return ctx.textOpen ? fail("provider", "text block started twice") : { textOpen: true };
    case "text_delta":
      if (!ctx.textOpen) return fail("provider", "text delta outside a text block");
      emitFrame(frames.textDelta(ev.delta));
      return { text: ctx.text + ev.delta };
    case "text_end":
      return ctx.textOpen ? { textOpen: false } : fail("provider", "text block ended without start");
    case "thinking_start":
      return ctx.thinkingStartedAt !== undefined
        ? fail("provider", "thinking started while already thinking")
        : { thinkingStartedAt: Date.now(), thinking: ctx.thinking ?? "" };
    case "thinking_delta":
      if (ctx.thinkingStartedAt === undefined) return fail("provider", "thinking delta outside a thinking block");
      emitFrame(frames.thinkingDelta(ev.delta));
      return { thinking: (ctx.thinking ?? "") + ev.delta };
    case "thinking_end":
      if (ctx.thinkingStartedAt === undefined) return fail("provider", "thinking ended without start");
      {
        const elapsed = Math.max(1, Date.now() - ctx.thinkingStartedAt);
        emitFrame(frames.thinkingCompleted(elapsed));
        return { thinkingStartedAt: undefined, thinkingMs: ctx.thinkingMs + elapsed };
      }
    case "toolcall_start":
      return startToolCall(ctx, ev, emitFrame);
    case "toolcall_delta":
      return toolCallDelta(ctx, ev, emitFrame);
    case "toolcall_end":
      return endToolCall(ctx, ev);
    case "usage":
      if (ctx.usage) return fail("provider", "a second usage event in one model call");
      if (ev.usage.outputTokens !== undefined) emitFrame(frames.tokenDelta(ev.usage.outputTokens));
      return { usage: ev.usage };
    case "done":
      return finish(ctx, ev);
  }
}

function startToolCall(
  ctx: ModelCallContext,
  ev: Extract<ModelEvent, { type: "toolcall_start" }>,
  emitFrame: (m: AgentServerMessage) => void,
): Patch {
  // An MCP tool name (`mcp__…`) the run no longer offers still reaches its driver, which answers that the tool is gone
  // (docs/protocol/cursor-tools.md §5.15): a model repeating a call from its history gets a tool error, not a failure.
  const offered = ctx.toolNames.includes(ev.name) || ev.name.startsWith(MCP_TOOL_PREFIX);
  const driver = offered ? toolDriver(ev.name) : undefined;
  if (!driver)
    return { failure: { kind: "protocol", message: `model called unknown tool ${JSON.stringify(ev.name)}` } };
  if (ctx.tools.has(ev.index))
    return { failure: { kind: "provider", message: `tool call index ${ev.index} started twice` } };
  emitFrame(frames.partialToolCall(ev.id, ctx.modelCallId, driver.placeholder(ev.id)));
  const tools = new Map(ctx.tools);
  tools.set(ev.index, { id: ev.id, name: ev.name, argsText: "", ended: false });
  return { tools };
}

function toolCallDelta(
  ctx: ModelCallContext,
  ev: Extract<ModelEvent, { type: "toolcall_delta" }>,
  emitFrame: (m: AgentServerMessage) => void,
): Patch {
  const open = ctx.tools.get(ev.index);
  if (!open || open.ended)
    return { failure: { kind: "provider", message: `arguments for tool call index ${ev.index} outside its block` } };
  const driver = toolDriver(open.name)!;
  emitFrame(frames.partialToolCall(open.id, ctx.modelCallId, driver.placeholder(open.id), ev.delta));
  const tools = new Map(ctx.tools);
  tools.set(ev.index, { ...open, argsText: open.argsText + ev.delta });
  return { tools };
}

function endToolCall(ctx: ModelCallContext, ev: Extract<ModelEvent, { type: "toolcall_end" }>): Patch {
  const open = ctx.tools.get(ev.index);
  if (!open || open.ended)
    return { failure: { kind: "provider", message: `tool call index ${ev.index} ended without start` } };
  let args: unknown;
  try {
    args = JSON.parse(ev.argumentsJson);
  } catch {
    return { failure: { kind: "provider", message: `tool call ${open.name} arguments are not valid JSON` } };
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return { failure: { kind: "provider", message: `tool call ${open.name} arguments are not a JSON object` } };
  }
  const tools = new Map(ctx.tools);
  // Canonical argument text: re-serialised once so every later request replays identical bytes
  // (docs/protocol/cursor-run.md §8.1–§8.2).
  tools.set(ev.index, { ...open, argsText: JSON.stringify(args), ended: true });
  return { tools };
}

function finish(ctx: ModelCallContext, ev: Extract<ModelEvent, { type: "done" }>): Patch {
  const fail = (message: string): Patch => ({ failure: { kind: "provider", message } });
  if (ev.reason === "length") return fail("the model stopped at its output limit (finish reason length)");
  if (ctx.textOpen || ctx.thinkingStartedAt !== undefined)
    return fail("provider finished with an unclosed text or thinking block");
  if ([...ctx.tools.values()].some((t) => !t.ended)) return fail("provider finished with an unclosed tool call");
  if (ev.reason === "toolUse" && ctx.tools.size === 0)
    return fail("provider finished for tool use without any tool call");
  if (ev.reason === "stop" && ctx.tools.size > 0) return fail("provider finished with stop but produced tool calls");
  return { doneReason: ev.reason, ...(ev.replay ? { replay: ev.replay } : {}) };
}

export function outputOf(ctx: ModelCallContext): ModelCallOutput {
  if (ctx.failure || !ctx.doneReason) {
    return {
      ok: false,
      failure: ctx.failure ?? { kind: "provider", message: "model call ended without done" },
      usage: ctx.usage,
    };
  }
  const ordered = [...ctx.tools.entries()].sort(([a], [b]) => a - b);
  const toolCalls = ordered.map(([index, t]) => ({ id: t.id, name: t.name, argumentsJson: t.argsText, index }));
  return {
    ok: true,
    reason: ctx.doneReason,
    usage: ctx.usage,
    assistant: {
      text: ctx.text,
      ...(ctx.thinking !== undefined ? { thinking: ctx.thinking, thinkingDurationMs: ctx.thinkingMs } : {}),
      ...(ctx.replay ? { replay: ctx.replay } : {}),
      toolCalls,
    },
    invocations: toolCalls.map((c) => ({
      callId: c.id,
      modelCallId: ctx.modelCallId,
      name: c.name,
      argumentsJson: c.argumentsJson,
      args: JSON.parse(c.argumentsJson) as Record<string, unknown>,
    })),
  };
}
