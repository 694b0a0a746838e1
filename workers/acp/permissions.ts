// ACP `session/request_permission` ⇄ the neutral interaction vocabulary. The agent offers options (allow once,
// allow always, reject once, reject always); an AEP answer is only allowed or denied, so it selects the agent's
// "once" option of that polarity, else its "always" one. A request nobody can answer any more (the turn was
// cancelled, the process is going) is answered `cancelled`, as ACP requires after session/cancel.
import type * as acp from "@agentclientprotocol/sdk";
import type { InteractionAnswer, WorkerEvent } from "../types.js";

interface Pending {
  readonly options: readonly acp.PermissionOption[];
  readonly resolve: (response: acp.RequestPermissionResponse) => void;
}

const cancelled: acp.RequestPermissionResponse = { outcome: { outcome: "cancelled" } };

export class AcpPermissions {
  private readonly pending = new Map<string, Pending>();
  private next = 0;

  constructor(
    private readonly generation: number,
    private readonly maxOpen: number,
    private readonly emit: (event: WorkerEvent) => void,
  ) {}

  /** Asks the user through the core; resolves with the agent's option once answered (or cancelled). */
  request(params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse> {
    if (this.pending.size >= this.maxOpen) return Promise.resolve(cancelled);
    this.next += 1;
    const id = `acp_perm_${this.generation}_${this.next}`;
    const { toolCall, options } = params;
    return new Promise((resolve) => {
      this.pending.set(id, { options, resolve });
      this.emit({
        type: "interaction.requested",
        id,
        kind: "permission",
        payload: {
          tool_name: toolCall.kind ?? "other",
          description: toolCall.title ?? toolCall.kind ?? "tool call",
          input: toolCall.rawInput ?? {},
          tool_use_id: toolCall.toolCallId,
          options: options.map((o) => ({ id: o.optionId, name: o.name, kind: o.kind })),
        },
      });
    });
  }

  /** false when the id is not open (already answered, withdrawn or never asked). */
  answer(id: string, answer: InteractionAnswer): boolean {
    const open = this.pending.get(id);
    if (!open) return false;
    this.pending.delete(id);
    const allowed = answer.kind === "permission" && answer.allowed;
    const option = pick(open.options, allowed ? ["allow_once", "allow_always"] : ["reject_once", "reject_always"]);
    open.resolve(option ? { outcome: { outcome: "selected", optionId: option.optionId } } : cancelled);
    return true;
  }

  /** Answers every open request `cancelled`; the ids are withdrawn from the core. */
  cancelAll(): string[] {
    const ids = [...this.pending.keys()];
    for (const open of this.pending.values()) open.resolve(cancelled);
    this.pending.clear();
    return ids;
  }
}

function pick(options: readonly acp.PermissionOption[], kinds: readonly string[]): acp.PermissionOption | undefined {
  for (const kind of kinds) {
    const option = options.find((o) => o.kind === kind);
    if (option) return option;
  }
  return undefined;
}
