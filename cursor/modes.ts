// The Cursor side of modes (docs/protocol/cursor-tools.md §6): the AgentMode values a run request or checkpoint
// carries, mapped onto the modes the gateway has assets for. Triage and project have no assets: no mapping.
import { AgentMode } from "../proto/gen/agent/v1/agent_pb.js";
import type { ModeId } from "../prompt/assets.js";

const FROM_WIRE = new Map<AgentMode, ModeId>([
  // An unset mode is the default Agent mode, as the client means it.
  [AgentMode.UNSPECIFIED, "agent"],
  [AgentMode.AGENT, "agent"],
  [AgentMode.ASK, "ask"],
  [AgentMode.PLAN, "plan"],
  [AgentMode.DEBUG, "debug"],
  [AgentMode.MULTITASK, "multitask"],
]);

const TO_WIRE = new Map<ModeId, AgentMode>([
  ["agent", AgentMode.AGENT],
  ["ask", AgentMode.ASK],
  ["plan", AgentMode.PLAN],
  ["debug", AgentMode.DEBUG],
  ["multitask", AgentMode.MULTITASK],
]);

/** The mode a wire AgentMode selects, or undefined for one the gateway does not serve. */
export function modeFromWire(mode: AgentMode): ModeId | undefined {
  return FROM_WIRE.get(mode);
}

export function modeToWire(mode: ModeId): AgentMode {
  return TO_WIRE.get(mode)!;
}

/** The wire name of a mode, for messages (`AGENT_MODE_ASK`). */
export function wireModeName(mode: AgentMode): string {
  return `AGENT_MODE_${AgentMode[mode] ?? mode}`;
}
