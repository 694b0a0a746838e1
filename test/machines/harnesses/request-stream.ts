// Harness for RequestStream (docs/protocol/cursor-transport.md §6): the real machine with its deliver/abandon actions
// recorded and the frames, heartbeats and end its outbound log writes observed; timers run on the SimulatedClock. A
// frame is not a machine event: the harness's OUTPUT appends one to the log, as the engine does.
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor } from "xstate";
import { AgentClientMessageSchema, AgentServerMessageSchema } from "../../../proto/gen/agent/v1/agent_pb.js";
import { requestStreamMachine } from "../../../machines/request-stream.js";
import { frames } from "../../../cursor/frames.js";
import type { Harness } from "../support/replay-graph.js";

const textDelta = (text: string) => toBinary(AgentServerMessageSchema, frames.textDelta(text));

type Entry =
  | { kind: "frame" | "heartbeat" | "end" | "deliver" | "restart"; at: number }
  | { kind: "abandon"; at: number; subscribers: number }
  | { kind: "gone"; at: number };

const runRequest = create(AgentClientMessageSchema, {
  message: { case: "runRequest", value: { conversationId: "c" } },
});
const clientHeartbeat = create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
const RETENTION = 30_000;

export const requestStreamHarness: Harness<Entry[]> = {
  name: "request-stream",
  machine: requestStreamMachine,
  maxSimplePaths: 400,
  start(clock) {
    const log: Entry[] = [];
    const at = () => clock.now();
    const actor = createActor(
      requestStreamMachine.provide({
        actions: {
          deliver: () => void log.push({ kind: "deliver", at: at() }),
          abandon: ({ context }) => void log.push({ kind: "abandon", at: at(), subscribers: context.subscribers }),
        },
      }),
      { input: { requestId: "r", now: at }, clock },
    );
    actor.subscribe({ complete: () => void log.push({ kind: "gone", at: at() }) });
    actor.start();
    const { outbound } = actor.getSnapshot().context;
    outbound.follow({
      frame: () => void log.push({ kind: "frame", at: at() }),
      heartbeat: () => void log.push({ kind: "heartbeat", at: at() }),
      end: () => void log.push({ kind: "end", at: at() }),
    });
    return {
      record: log,
      send: (e) => {
        if (e.type === "OUTPUT") return void outbound.append(textDelta("x"));
        const wasTerminal = actor.getSnapshot().value === "terminal";
        actor.send(e as never);
        if (wasTerminal && actor.getSnapshot().value !== "terminal") log.push({ kind: "restart", at: at() });
      },
      snapshot: () => actor.getSnapshot(),
    };
  },
  summary: (s) => [
    s.context.subscribers,
    Number(s.context.nextSeqno),
    s.context.held.size,
    Math.min(s.context.outbound.size, 1),
  ],
  /** A frame the run writes: appended to the log (refused after the EndStream), not sent to the machine. */
  extraEvents: (s) => (s.status === "active" ? [{ type: "OUTPUT" }] : []),
  payloads(type, s) {
    switch (type) {
      case "APPEND":
        return [
          { type, seqno: 1n, message: runRequest },
          { type, seqno: 2n, message: clientHeartbeat },
          { type, seqno: 3n, message: clientHeartbeat }, // a gap: held until 2 arrives
        ];
      case "END":
        return [{ type, end: { ok: true } }];
      case "SUBSCRIBE":
        return s.context.subscribers < 2 ? [{ type }] : [];
      default:
        return undefined;
    }
  },
  checkFinal({ record }) {
    // Per stream epoch (a reused request_id starts a new one): EndStream once, nothing after it but replay time.
    let ended = false;
    for (const e of record) {
      if (e.kind === "restart") ended = false;
      else if (e.kind === "end") {
        expect(ended, "EndStream emitted twice in one epoch").to.equal(false);
        ended = true;
      } else if (e.kind === "frame" || e.kind === "heartbeat")
        expect(ended, `${e.kind} after EndStream`).to.equal(false);
      else if (e.kind === "abandon") expect(e.subscribers, "abandoned while a subscriber was attached").to.equal(0);
    }
    const gone = record.at(-1)!;
    expect(gone.kind).to.equal("gone");
    const lastEnd = [...record].reverse().find((e) => e.kind === "end");
    expect(lastEnd, "a stream disappears only after its EndStream").to.not.equal(undefined);
    expect(gone.at - lastEnd!.at, "a terminal stream stays replayable for the retention time").to.be.at.least(
      RETENTION,
    );
  },
  lateEvents: [{ type: "OUTPUT" }, { type: "END", end: { ok: true } }],
};
