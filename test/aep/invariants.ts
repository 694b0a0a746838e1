// The client-side checker of the ordering rules of docs/protocol/aep.md §8, run on every envelope a test receives
// (docs/protocol/aep.md §8.1). One checker follows one session across reconnects, so seq must keep rising over the
// whole session.
import type { ServerEnvelope } from "../../aep/wire/envelope.js";

const TURN_KINDS = new Set([
  "message.start",
  "message.delta",
  "message.end",
  "message",
  "tool_call",
  "tool_result",
  "tool_update",
  "plan",
  "permission_request",
  "question_request",
  "elicitation_request",
  "reasoning",
  "step",
  "runtime.execution.started",
]);

interface Turn {
  executionId: string | undefined;
  /** Joined mid-way after a reconnect: blocks begun before it are not ours to check. */
  joined: boolean;
  open: Set<string>;
  deltas: Map<string, string>;
  /** A full `message` differs from its deltas: some were dropped. */
  lost: boolean;
  /** A message arrived with no delta at all (not streamed, or every delta dropped). */
  unstreamed: boolean;
}

export class OrderingChecker {
  readonly violations: string[] = [];
  turnsClosed = 0;
  private lastSeq = 0;
  private turn: Turn | undefined;
  private fresh = true;
  /** The execution of a turn the last connection was in when it went away (a joined turn continues it). */
  private interrupted: string | undefined;
  private readonly started = new Set<string>();
  private readonly done = new Set<string>();
  private readonly settled = new Set<string>();
  private readonly accepted = new Set<string>();
  private readonly acked = new Set<string>();

  /** A new connection to the same session begins. */
  reconnected(): void {
    this.fresh = true;
    this.interrupted = this.turn?.executionId;
    this.turn = undefined;
  }

  check(e: ServerEnvelope): void {
    const fail = (why: string): void => {
      this.violations.push(`${e.event.type} seq=${e.seq}: ${why}`);
    };
    if (e.version !== "aep/v1") fail("version is not aep/v1");
    if (!/^evt_/.test(e.id)) fail("id is not evt_<uuid>");
    const first = this.fresh;
    this.fresh = false;
    if (e.event.type === "pong") return void (e.seq !== 0 && fail("pong must have seq 0"));
    if (e.session_id !== "") {
      if (e.seq <= this.lastSeq) fail(`seq not increasing (last ${this.lastSeq})`);
      this.lastSeq = e.seq;
    }
    const type = e.event.type;
    const data = e.event.data as Record<string, any>;
    switch (type) {
      case "state":
        if (data.state !== "running") return void (this.turn && fail(`state(${data.state}) inside an open turn`));
        if (this.turn) fail("state(running) inside an open turn");
        this.turn = {
          executionId: first ? this.interrupted : undefined,
          joined: first,
          open: new Set(),
          deltas: new Map(),
          lost: false,
          unstreamed: false,
        };
        return;
      case "done": {
        const turn = this.turn;
        if (!turn) return fail("done outside a turn");
        if (turn.open.size > 0) fail(`done with open messages ${[...turn.open].join(",")}`);
        if (turn.lost && !data.dropped) fail("deltas do not add up to their message but done.dropped is not set");
        if (data.dropped && !turn.lost && !turn.unstreamed)
          fail("done.dropped is set but every message has all its deltas");
        if (turn.executionId) this.done.add(turn.executionId);
        this.turn = undefined;
        this.turnsClosed += 1;
        return;
      }
      case "runtime.execution.completed":
      case "runtime.execution.failed": {
        const id = data.execution_id as string;
        if (this.settled.has(id)) fail(`${id} settled twice`);
        this.settled.add(id);
        if (this.started.has(id) && !this.done.has(id)) fail(`settled before the done of ${id}`);
        return;
      }
      case "input.ack": {
        if (data.duplicate) return;
        const id = data.client_message_id as string;
        const set = data.status === "accepted" ? this.accepted : this.acked;
        if (set.has(id)) fail(`second ${data.status === "accepted" ? "accepted" : "settling"} ack for ${id}`);
        set.add(id);
        if (data.status !== "accepted" && !this.accepted.has(id)) fail(`${data.status} before accepted for ${id}`);
        return;
      }
    }
    if (!TURN_KINDS.has(type)) return;
    const turn = this.turn;
    if (!turn) return fail("outside a turn");
    switch (type) {
      case "runtime.execution.started":
        if (turn.executionId) fail("second started in one turn");
        turn.executionId = data.execution_id;
        this.started.add(data.execution_id);
        return;
      case "message.start":
        turn.open.add(data.id);
        turn.deltas.set(data.id, "");
        return;
      case "message.delta":
        if (!turn.open.has(data.message_id))
          return void (turn.joined || fail(`delta for ${data.message_id} which is not open`));
        turn.deltas.set(data.message_id, turn.deltas.get(data.message_id)! + data.content);
        return;
      case "message.end":
        if (!turn.open.has(data.message_id))
          return void (turn.joined || fail(`end for ${data.message_id} which is not open`));
        turn.open.delete(data.message_id);
        return;
      case "message":
        if (turn.deltas.get(data.id) === "") turn.unstreamed = true;
        else if (turn.deltas.has(data.id) && turn.deltas.get(data.id) !== data.content) turn.lost = true;
        return;
    }
  }
}
