// Requests the CLI makes of its host (can_use_tool, elicitation) become neutral interactions; neutral answers go back
// in exactly the shapes 2.1.328 accepts: {behavior:"allow", updatedInput} / {behavior:"deny", message} (any other
// shape counts as a denial, fixture b3), AskUserQuestion answers as updatedInput {...input, answers}, elicitation
// answers as {action, content}.
import type { InteractionAnswer, InteractionKind, WorkerEvent } from "../types.js";
import { type ControlRequestFrame, type StdinFrame, stdinFrames } from "./frames.js";

interface PendingInteraction {
  readonly kind: InteractionKind;
  readonly input: Record<string, unknown>;
}

/** Fields of a can_use_tool request kept for the client (docs/protocol/claude-code.md). */
const permissionFields = [
  "tool_name",
  "display_name",
  "description",
  "input",
  "permission_suggestions",
  "blocked_path",
  "tool_use_id",
  "decision_reason",
];

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export type HostRequestOutcome =
  | { event: Extract<WorkerEvent, { type: "interaction.requested" }> }
  | { reply: StdinFrame };

export class InteractionRegistry {
  private readonly pending = new Map<string, PendingInteraction>();

  /** A control_request from the CLI: an interaction to show, or an immediate reply when this host cannot serve it. */
  open(frame: ControlRequestFrame): HostRequestOutcome {
    const { request_id: id, request } = frame;
    if (request.subtype === "can_use_tool") {
      // Trap 18: a request we cannot read is denied at once so the CLI never waits forever.
      if (typeof request.tool_name !== "string")
        return { reply: stdinFrames.success(id, { behavior: "deny", message: "Unreadable permission request." }) };
      const input = isRecord(request.input) ? request.input : {};
      if (request.tool_name === "AskUserQuestion") {
        this.pending.set(id, { kind: "question", input });
        const payload = {
          tool_name: request.tool_name,
          questions: Array.isArray(input.questions) ? input.questions : [],
          tool_use_id: request.tool_use_id,
        };
        return { event: { type: "interaction.requested", id, kind: "question", payload } };
      }
      this.pending.set(id, { kind: "permission", input });
      const payload = Object.fromEntries(
        permissionFields.filter((f) => request[f] !== undefined).map((f) => [f, request[f]]),
      );
      return { event: { type: "interaction.requested", id, kind: "permission", payload } };
    }
    if (request.subtype === "elicitation") {
      this.pending.set(id, { kind: "elicitation", input: {} });
      const { subtype: _subtype, ...payload } = request;
      return { event: { type: "interaction.requested", id, kind: "elicitation", payload } };
    }
    // hook_callback, oauth/host token refresh, mcp_message…: this host registered none of them.
    return { reply: stdinFrames.error(id, `Unsupported control request subtype: ${request.subtype}`) };
  }

  /** control_cancel_request: true when the request was still open (it is withdrawn now). */
  withdraw(id: string): boolean {
    return this.pending.delete(id);
  }

  /** Every still-open id, removed (the turn or the process ended). */
  withdrawAll(): string[] {
    const ids = [...this.pending.keys()];
    this.pending.clear();
    return ids;
  }

  /** The control_response for an answer, or undefined when the id is not open (answered, withdrawn, unknown). */
  answer(id: string, answer: InteractionAnswer): StdinFrame | undefined {
    const open = this.pending.get(id);
    if (!open) return undefined;
    this.pending.delete(id);
    return stdinFrames.success(id, responseFor(open, answer));
  }
}

function responseFor(open: PendingInteraction, answer: InteractionAnswer): Record<string, unknown> {
  if (open.kind === "elicitation") {
    if (answer.kind === "elicitation")
      return { action: answer.action, ...(answer.content ? { content: answer.content } : {}) };
    return { action: "decline" };
  }
  if (answer.kind === "permission" && !answer.allowed)
    return { behavior: "deny", message: answer.reason ?? "The user denied this request." };
  if (open.kind === "question" && answer.kind === "question")
    return { behavior: "allow", updatedInput: { ...open.input, answers: answer.answers } };
  if (open.kind === "permission" && answer.kind === "permission")
    return { behavior: "allow", updatedInput: open.input };
  return { behavior: "deny", message: `A ${answer.kind} answer does not fit a ${open.kind} request.` };
}
