// Property test of the assembled run (issue 3): fast-check interleaves provider events, client exec answers, KV
// acknowledgements, cancels, engine failures and timer expiries against the real Run + ModelCall + ToolRound +
// PendingExec + Checkpoint machines, then checks the termination invariants on the frames they emitted
// (docs/protocol/cursor-run.md §5.2, §7.4, §10.2–§10.6; docs/protocol/cursor-transport.md §7.5;
// docs/protocol/cursor-tools.md §3.1). The summary line gives how many sequences ran and how they ended.
import { expect } from "chai";
import fc from "fast-check";
import { create } from "@bufbuild/protobuf";
import { WriteResultSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ModelEvent } from "../../providers/types.js";
import { assertEndStreamInvariants, frameKind } from "../support/observed-frames.js";
import { readResult } from "./harnesses/exec-and-checkpoint.js";
import { AssembledRun } from "./support/assembled-run.js";

type Which = "oldest" | "latest" | "unknown";
type Command =
  | { k: "model"; event: ModelEvent }
  | { k: "answer" }
  | { k: "askRead"; n: 1 | 2 }
  /** Whatever the run waits for next: acknowledge SETs, answer the oldest exec, or answer / ask for tools. */
  | { k: "progress"; ask: boolean; n: 1 | 2 }
  | { k: "think" | "stall" }
  | { k: "providerError" }
  | { k: "eof" }
  | { k: "result"; which: Which; branch: "right" | "wrong" }
  | { k: "close" | "throw"; which: Which }
  | { k: "ack" | "ackAll" | "refuse" }
  | { k: "cancel" | "fail" | "timer" };

/** Commands that move a run towards success: answers, tool requests, exec results, acknowledgements. */
const productive: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      k: fc.constant("progress" as const),
      ask: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      n: fc.constantFrom<1 | 2>(1, 2),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ k: "answer" } as const) },
  { weight: 3, arbitrary: fc.constantFrom(1, 2).map((n) => ({ k: "askRead", n }) as const) },
  { weight: 1, arbitrary: fc.constant({ k: "think" } as const) },
  {
    weight: 6,
    arbitrary: fc
      .constantFrom("oldest", "latest")
      .map((w) => ({ k: "result", which: w as Which, branch: "right" }) as const),
  },
  { weight: 6, arbitrary: fc.constantFrom({ k: "ackAll" } as const, { k: "ack" } as const) },
);

/** Commands that end a run early, in whatever phase they land. */
const disruptive: fc.Arbitrary<Command> = fc.oneof(
  fc
    .constantFrom<ModelEvent>(
      { type: "text_start" },
      { type: "text_delta", delta: "x" },
      { type: "thinking_end" },
      { type: "usage", usage: { outputTokens: 1 } },
      { type: "done", reason: "length" },
      { type: "done", reason: "stop" },
    )
    .map((event) => ({ k: "model", event }) as const),
  fc.constantFrom({ k: "stall" } as const, { k: "providerError" } as const, { k: "eof" } as const),
  fc.record({
    k: fc.constant("result" as const),
    which: fc.constantFrom<Which>("oldest", "unknown"),
    branch: fc.constantFrom("right" as const, "wrong" as const),
  }),
  fc.record({
    k: fc.constantFrom("close" as const, "throw" as const),
    which: fc.constantFrom<Which>("oldest", "latest", "unknown"),
  }),
  fc.constantFrom({ k: "refuse" } as const, { k: "cancel" } as const, { k: "fail" } as const, { k: "timer" } as const),
);

/** A mostly productive sequence with up to two disruptions inserted anywhere, so every phase gets interrupted. */
const sequence: fc.Arbitrary<Command[]> = fc
  .tuple(
    fc.array(productive, { minLength: 3, maxLength: 40 }),
    fc.array(fc.tuple(fc.nat(), disruptive), { maxLength: 2 }),
  )
  .map(([steps, disruptions]) => {
    const out = [...steps];
    for (const [at, c] of disruptions) out.splice(at % (out.length + 1), 0, c);
    return out;
  });

/** The test's model of the client: which execs it has answered and which blob SETs it has acknowledged. */
class Client {
  readonly answered = new Set<number>();
  readonly acked = new Set<number>();
  readonly refused = new Set<number>();
  private callSeq = 0;

  constructor(private readonly run: AssembledRun) {}

  private execId(w: Which): number | undefined {
    const open = this.run.sent("exec").filter((id) => !this.answered.has(id));
    if (w === "unknown") return Math.max(0, ...this.run.sent("exec")) + 10;
    return w === "oldest" ? open[0] : open.at(-1);
  }

  private unacked(): number[] {
    return this.run.sent("kvSet").filter((id) => !this.acked.has(id) && !this.refused.has(id));
  }

  async do(c: Command): Promise<void> {
    const run = this.run;
    const model = (...events: ModelEvent[]) =>
      events.reduce((p, event) => p.then(() => run.fromProvider({ type: "MODEL", event })), Promise.resolve());
    switch (c.k) {
      case "progress":
        if (this.unacked().length) return this.do({ k: "ackAll" });
        if (this.execId("oldest") !== undefined) return this.do({ k: "result", which: "oldest", branch: "right" });
        return this.do(c.ask ? { k: "askRead", n: c.n } : { k: "answer" });
      case "model":
        return model(c.event);
      case "answer":
        return model(
          { type: "text_start" },
          { type: "text_delta", delta: "Done." },
          { type: "text_end" },
          { type: "usage", usage: { inputTokens: 9, outputTokens: 2 } },
          { type: "done", reason: "stop" },
        );
      case "askRead": {
        const calls = Array.from({ length: c.n }, (_, index) => ({
          index,
          id: `call_${this.callSeq++}`,
          name: "Read",
          argumentsJson: '{"path":"a.txt"}',
        }));
        for (const t of calls)
          await model(
            { type: "toolcall_start", index: t.index, id: t.id, name: t.name },
            { type: "toolcall_end", ...t },
          );
        return model({ type: "done", reason: "toolUse" });
      }
      case "think":
        return model(
          { type: "thinking_start" },
          { type: "thinking_delta", delta: "Let me see." },
          { type: "thinking_end" },
        );
      case "stall": // thinking that never ends: only a cancel, failure or bad event ends this pass
        return model({ type: "thinking_start" }, { type: "thinking_delta", delta: "Hmm" });
      case "providerError":
        return run.fromProvider({
          type: "PROVIDER_ERROR",
          message: "chat stream reported an error: overloaded",
          aborted: false,
        });
      case "eof":
        return run.fromProvider({ type: "STREAM_END" });
      case "result":
      case "close":
      case "throw": {
        const id = this.execId(c.which);
        if (id === undefined) return;
        if (!run.finished) this.answered.add(id);
        if (c.k === "close") return run.fromClient({ type: "CLIENT_STREAM_CLOSE", id });
        if (c.k === "throw") return run.fromClient({ type: "CLIENT_THROW", id, error: "permission denied" });
        const message =
          c.k === "result" && c.branch === "right"
            ? readResult()
            : ({ case: "writeResult", value: create(WriteResultSchema, {}) } as const);
        return run.fromClient({ type: "CLIENT_EXEC", id, message });
      }
      case "ack":
      case "ackAll":
      case "refuse": {
        const ids = c.k === "ackAll" ? this.unacked() : this.unacked().slice(0, 1);
        for (const id of ids) {
          (c.k === "refuse" ? this.refused : this.acked).add(id);
          await run.fromClient({ type: "KV_SET_RESULT", id, ...(c.k === "refuse" ? { error: "disk full" } : {}) });
        }
        return;
      }
      case "cancel":
        return run.fromClient({ type: "CANCEL", cause: "client", reason: "user pressed stop" });
      case "fail":
        return run.fromClient({ type: "BACKLOG_EXCEEDED", message: "the run exceeded 100000 stream frames" });
      case "timer":
        return run.advance(30_000);
    }
  }
}

function checkInvariants(run: AssembledRun, client: Client): "succeeded" | "failed" | "canceled" {
  const finishes = run.log.filter((e) => e.kind === "finish");
  expect(finishes.length, "exactly one terminal commit").to.equal(1);
  const end = finishes[0]!.end;
  expect(
    run.log.filter((e) => e.kind === "frame" && e.afterFinish),
    "output closed after EndStream",
  ).to.deep.equal([]);
  const observed = run.observed();
  assertEndStreamInvariants(observed);
  const kinds = observed.map(frameKind);

  // Every thinking segment is closed, with its real elapsed time, before the EndStream (docs/protocol/cursor-run.md
  // §7.4).
  const lastThinking = kinds.lastIndexOf("thinking_delta");
  if (lastThinking >= 0)
    expect(kinds.indexOf("thinking_completed", lastThinking), "thinking left open at the end").to.be.greaterThan(
      lastThinking,
    );

  // A checkpoint is published only once every blob SET before it was acknowledged (docs/protocol/cursor-run.md §5.2).
  const ackedSoFar = new Set<number>();
  const setSoFar: number[] = [];
  for (const e of run.log) {
    if (e.kind === "client" && e.event.type === "KV_SET_RESULT" && !e.event.error) ackedSoFar.add(e.event.id);
    if (e.kind !== "frame") continue;
    const m = e.message.message;
    if (m.case === "kvServerMessage" && m.value.message.case === "setBlobArgs") setSoFar.push(m.value.id);
    if (m.case === "conversationCheckpointUpdate")
      expect(
        setSoFar.filter((id) => !ackedSoFar.has(id)),
        "checkpoint published before its SETs were acknowledged",
      ).to.deep.equal([]);
  }

  // Abort exactly the execs the client was still running; none after success (docs/protocol/cursor-run.md §10.2–§10.5;
  // docs/protocol/cursor-tools.md §3.1).
  const aborts = kinds
    .flatMap((k, i) => (k === "abort" ? [i] : []))
    .map((i) => {
      const f = observed[i]!;
      return f.kind === "message" && f.message.message.case === "execServerControlMessage"
        ? f.message.message.value.message.value!.id
        : -1;
    });
  const stillRunning = run.sent("exec").filter((id) => !client.answered.has(id));
  expect(aborts.sort()).to.deep.equal(end.kind === "succeeded" ? [] : stillRunning.sort());
  if (end.kind === "succeeded") expect(stillRunning).to.deep.equal([]);
  return end.kind;
}

describe("assembled run: generated interleavings keep the termination invariants", function () {
  this.timeout(120_000);

  it("200 sequences of provider events, client answers, KV acks, cancels, failures and timeouts", async () => {
    const endings = { succeeded: 0, failed: 0, canceled: 0 };
    let events = 0;
    let execs = 0;
    await fc.assert(
      fc.asyncProperty(sequence, async (commands) => {
        const run = new AssembledRun();
        const client = new Client(run);
        await run.start();
        for (const c of commands) {
          if (run.finished) break;
          await client.do(c);
        }
        if (!run.finished) await run.fromClient({ type: "CANCEL", cause: "client", reason: "test over" });
        const ending = checkInvariants(run, client);
        // Late provider, KV and Exec events after the end change nothing.
        const logged = run.log.filter((e) => e.kind !== "client" && e.kind !== "provider").length;
        for (const c of [
          { k: "answer" },
          { k: "result", which: "oldest", branch: "right" },
          { k: "ackAll" },
          { k: "cancel" },
        ] as Command[])
          await client.do(c);
        expect(
          run.log.filter((e) => e.kind !== "client" && e.kind !== "provider").length,
          "a late event changed the ended run",
        ).to.equal(logged);
        endings[ending]++;
        events += run.log.filter((e) => e.kind === "client" || e.kind === "provider").length;
        execs += run.sent("exec").length;
      }),
      { numRuns: 200, seed: 20261202 },
    );
    console.log(
      `      assembled run: 200 sequences (${events} events, ${execs} execs): ${endings.succeeded} succeeded, ${endings.failed} failed, ${endings.canceled} canceled`,
    );
    for (const kind of ["succeeded", "failed", "canceled"] as const)
      expect(endings[kind], `no generated sequence ${kind}`).to.be.greaterThan(0);
  });
});
