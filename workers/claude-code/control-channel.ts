// Our side of the control RPC (docs/protocol/claude-code.md §6.2): a request is registered as pending before it is
// written, settled by the control_response with the same request_id, abandoned after a bounded wait, and failed when
// the transport closes (claude-code.md §6.2). Responses nobody waits for (late acks of abandoned requests) are kept in
// a bounded buffer, oldest evicted first.
import type { ControlResponseFrame } from "./frames.js";

export type ControlResult = { ok: true; response: unknown } | { ok: false; error: string };

interface Pending {
  settle(result: ControlResult): void;
  timer: NodeJS.Timeout;
}

export class ControlChannel {
  private readonly pending = new Map<string, Pending>();
  private readonly unmatched = new Map<string, ControlResult>();
  private closedReason: string | undefined;
  private nextId = 0;

  constructor(private readonly maxUnmatched: number) {}

  /** A fresh request id, unique within this process's lifetime. */
  newRequestId(prefix: string): string {
    this.nextId += 1;
    return `${prefix}_${this.nextId}`;
  }

  /**
   * Registers `requestId`, then runs `write`; resolves with the response, or `{ok:false}` on an error response,
   * after `timeoutMs`, on a failed write, or when the transport closes. Never rejects.
   */
  request(requestId: string, timeoutMs: number, write: () => Promise<void>): Promise<ControlResult> {
    if (this.closedReason !== undefined) return Promise.resolve({ ok: false, error: this.closedReason });
    const early = this.unmatched.get(requestId);
    if (early) {
      this.unmatched.delete(requestId);
      return Promise.resolve(early);
    }
    return new Promise<ControlResult>((resolve) => {
      const settle = (result: ControlResult) => {
        clearTimeout(timer);
        this.pending.delete(requestId);
        resolve(result);
      };
      const timer = setTimeout(
        () => settle({ ok: false, error: `no control_response for ${requestId} within ${timeoutMs} ms` }),
        timeoutMs,
      );
      this.pending.set(requestId, { settle, timer });
      write().catch((err: unknown) => settle({ ok: false, error: `writing ${requestId} failed: ${String(err)}` }));
    });
  }

  /** Routes one control_response from the CLI. */
  deliver(frame: ControlResponseFrame): void {
    const { request_id: requestId, subtype } = frame.response;
    const result: ControlResult =
      subtype === "success"
        ? { ok: true, response: frame.response.response }
        : { ok: false, error: frame.response.error ?? "control request failed" };
    const waiter = this.pending.get(requestId);
    if (waiter) return waiter.settle(result);
    this.unmatched.set(requestId, result);
    if (this.unmatched.size > this.maxUnmatched) this.unmatched.delete(this.unmatched.keys().next().value as string);
  }

  unmatchedCount(): number {
    return this.unmatched.size;
  }

  /** The transport is gone: every pending request fails now, later ones at once. */
  close(reason: string): void {
    this.closedReason ??= reason;
    for (const waiter of [...this.pending.values()]) waiter.settle({ ok: false, error: reason });
  }
}
