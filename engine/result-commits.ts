// How a run's canonical messages become store rows, the group commit of its tool results (the last of a round with
// the settled checkpoint), and the durable write of a checkpoint (docs/protocol/cursor-run.md §5.2, §6.2–§6.5;
// docs/protocol/cursor-tools.md §2.5, §4.2–§4.3).
import type { CheckpointPlan, CheckpointWrite } from "../machines/checkpoint.js";
import type { ToolCall } from "../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { type NewMessage, StaleCheckpointError, type Store } from "../store/index.js";

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
 * result waits for nothing. Each caller resumes only once its result is durable, in completion order. `write` makes
 * one batch durable (RoundCommits: the batch that completes a round carries the settled checkpoint).
 */
class ResultCommits {
  private waiting: { messages: ToolResult[]; committed: Promise<void> } | undefined;
  private written: Promise<void> = Promise.resolve();

  constructor(private readonly write: (batch: ToolResult[]) => Promise<void>) {}

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
      await this.write(batch.messages);
    });
    this.waiting = batch;
    this.written = batch.committed.catch(() => {});
    return batch.committed;
  }
}

/** What a round's commits need from its run: the settled checkpoint's plan and the two ways to write. */
export interface RoundWrites {
  /** How many calls the round has: the batch that reaches it completes the round. */
  calls: number;
  settle(): Promise<CheckpointPlan>;
  commitCheckpoint(write: CheckpointWrite): Promise<void>;
  appendResults(batch: ToolResult[]): Promise<unknown>;
}

/**
 * One tool round's result commits. The batch that completes the round commits the settled checkpoint in the same
 * transaction (docs/protocol/cursor-run.md §5.2, §6.2): its SETs follow the batch's tool_call_completed, and nothing
 * is committed between their acknowledgement and the publish. A superseded run writes the results alone; its settled
 * checkpoint is then refused at its own commit.
 */
export class RoundCommits {
  /** The round's results so far, in completion order, with their typed cards (the settled checkpoint's steps). */
  readonly completed: Array<{ message: ToolResult; toolCall: ToolCall }> = [];
  private written = 0;
  private settled: CheckpointPlan | undefined;
  private readonly results = new ResultCommits((batch) => this.write(batch));

  constructor(private readonly round: RoundWrites) {}

  commit(message: ToolResult, toolCall: ToolCall): Promise<void> {
    this.completed.push({ message, toolCall });
    return this.results.commit(message);
  }

  /** The settled checkpoint: the one the last results committed (durable), else built now. */
  async takeSettled(): Promise<CheckpointPlan> {
    const plan = this.settled ?? (await this.round.settle());
    this.settled = undefined;
    return plan;
  }

  private async write(batch: ToolResult[]): Promise<void> {
    this.written += batch.length;
    if (this.written === this.round.calls) {
      const plan = await this.round.settle();
      this.settled = plan;
      try {
        await this.round.commitCheckpoint({ ...plan.write, messages: batch });
        this.settled = { ...plan, durable: true };
        return;
      } catch (e) {
        if (!(e instanceof StaleCheckpointError)) throw e;
      }
    }
    await this.round.appendResults(batch);
  }
}

/**
 * Children before the head, in one transaction with the messages the checkpoint makes visible; a superseded run may
 * not move the head (docs/protocol/cursor-run.md §6.2–§6.3, §7.1). A settled round lets the next provider call start,
 * so its index is persisted in the same transaction (§6.5, one fsync instead of two); returns that index.
 */
export async function commitCheckpointWrite(
  deps: { store: Store; isCurrent(): boolean },
  run: { conversationId: string; runId: string },
  pending: CheckpointWrite,
  persistedCallIndex: number,
): Promise<number | undefined> {
  if (!deps.isCurrent()) throw new StaleCheckpointError(run.conversationId);
  const { snapshots } = pending;
  // The round ran at the last call's index (a resumed round, before any call, at 0); the next call takes the one after.
  const nextCallIndex = pending.kind === "settled" ? Math.max(persistedCallIndex, 0) + 1 : undefined;
  await deps.store.commitCheckpoint({
    conversationId: run.conversationId,
    checkpointId: snapshots[snapshots.length - 1]!.stateBlob.id,
    blobs: snapshots.flatMap((s) => [...s.sets, s.stateBlob]),
    edges: snapshots.flatMap((s) => s.edges),
    stillCurrent: deps.isCurrent,
    ...(pending.messages.length ? { messages: { runId: run.runId, rows: messageRows(pending.messages) } } : {}),
    ...(nextCallIndex !== undefined ? { providerCallIndex: { runId: run.runId, index: nextCallIndex } } : {}),
  });
  return nextCallIndex;
}
