// How a run's canonical messages become store rows, and the group commit of its tool results
// (docs/protocol/cursor-run.md §6.4; docs/protocol/cursor-tools.md §2.5).
import type { CanonicalMessage } from "../providers/messages.js";
import type { NewMessage, Store } from "../store/index.js";

type ToolResult = Extract<CanonicalMessage, { role: "tool" }>;

export function messageRows(messages: readonly CanonicalMessage[]): NewMessage[] {
  return messages.map((m) => ({
    role: m.role,
    origin: m.role === "user" ? m.origin : m.role,
    body: JSON.stringify(m),
    ...((m.role === "assistant" || m.role === "tool") && m.toolRoundId ? { toolRoundId: m.toolRoundId } : {}),
  }));
}

/**
 * Group commit: a result joins the batch still waiting for the store (results of one client append, or those that
 * complete while the previous batch is being written), so a batch is one transaction and one fsync, and a lone
 * result waits for nothing. Each caller resumes only once its result is durable, in completion order.
 */
export class ResultCommits {
  private waiting: { messages: ToolResult[]; committed: Promise<void> } | undefined;
  private written: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly conversationId: string,
    private readonly runId: string,
  ) {}

  commit(message: ToolResult): Promise<void> {
    const waiting = this.waiting;
    if (waiting) {
      waiting.messages.push(message);
      return waiting.committed;
    }
    const batch: { messages: ToolResult[]; committed: Promise<void> } = {
      messages: [message],
      committed: Promise.resolve(),
    };
    batch.committed = this.written.then(async () => {
      this.waiting = undefined;
      await this.store.appendMessages(this.conversationId, this.runId, messageRows(batch.messages));
    });
    this.waiting = batch;
    this.written = batch.committed.catch(() => {});
    return batch.committed;
  }
}
