// Which request is whose subagent (docs/protocol/cursor-run.md §13): each request's parent headers, bound on first
// sight and held for as long as its stream. The client starts children itself, so this is all the server knows of
// the family: enough to give a child the subagent tool set and to cancel the children a canceled parent leaves.
import { RpcError } from "../cursor/errors.js";
import type { ParentLink } from "../transport/agent-backend.js";
import type { Logger } from "../log/logger.js";
import type { RunHandle } from "./stream-entry.js";

const HEADER_OF = { requestId: "x-parent-request-id", toolCallId: "x-parent-agent-tool-call-id" } as const;

export class SubagentLinks {
  /** Child request_id → its parent headers; an entry lives as long as the child's stream. */
  private readonly links = new Map<string, ParentLink>();

  /** Binds the headers of one message of a request. A value differing from the bound one is a protocol error: the
   * message is refused and the request's run canceled. */
  bind(requestId: string, link: ParentLink | undefined, runOf: (requestId: string) => RunHandle | undefined): void {
    if (!link) return;
    const bound = this.links.get(requestId) ?? {};
    for (const key of ["requestId", "toolCallId"] as const) {
      const value = link[key];
      if (value !== undefined && bound[key] !== undefined && bound[key] !== value) {
        const reason = `protocol error: ${HEADER_OF[key]} changed on request ${requestId} (${bound[key]} → ${value})`;
        const run = runOf(requestId);
        if (run && !run.finished) run.actor.send({ type: "CANCEL", cause: "client", reason });
        throw new RpcError(reason, "invalid_argument");
      }
    }
    this.links.set(requestId, { ...bound, ...link });
  }

  of(requestId: string): ParentLink | undefined {
    return this.links.get(requestId);
  }

  /** The children a parent request started that are still known, with the Task call each belongs to. */
  childrenOf(parentRequestId: string): Array<{ requestId: string; toolCallId: string | undefined }> {
    return [...this.links]
      .filter(([, link]) => link.requestId === parentRequestId)
      .map(([requestId, link]) => ({ requestId, toolCallId: link.toolCallId }));
  }

  /** A canceled parent takes the children it was still waiting for with it; a background child's Task call has
   * completed already, so that child runs on. */
  cancelChildren(
    parent: { requestId: string; completedToolCall(callId: string): boolean },
    runOf: (requestId: string) => RunHandle | undefined,
  ): void {
    for (const child of this.childrenOf(parent.requestId)) {
      if (child.toolCallId !== undefined && parent.completedToolCall(child.toolCallId)) continue;
      cancelRun(runOf(child.requestId), "the parent run was canceled");
    }
  }

  forget(requestId: string): void {
    this.links.delete(requestId);
  }
}

function cancelRun(run: RunHandle | undefined, reason: string): void {
  if (run && !run.finished) run.actor.send({ type: "CANCEL", cause: "parent", reason });
}

/** cancel_subagent_action: the subagent's own run (its conversation is the subagent id) ends canceled with its
 * Execs aborted (docs/protocol/cursor-run.md §13). */
export function cancelSubagent(run: RunHandle | undefined, subagentId: string, log: Logger): void {
  log.info("subagent canceled", { subagent_id: subagentId, running: run !== undefined && !run.finished });
  cancelRun(run, "the subagent was canceled by its parent");
}
