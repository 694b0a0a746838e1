// The live-run registry behind the status page (docs/status-api.md §2): state paths from real XState snapshots,
// endings with redacted messages, the bounded ring of recent runs and the bounded set of listeners.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { createActor, createMachine } from "xstate";
import { LiveRunRegistry, MAX_LISTENERS, RECENT_RUNS, statePath } from "../../engine/live-runs.js";
import { clearSecrets, registerSecrets } from "../../log/logger.js";
import { RequestedModelSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { StatusEvent } from "../../status/types.js";

const MODELS = [
  { id: "configured", provider: "anthropic" as const, baseUrl: "http://x", apiKey: "k".repeat(20), model: "claude" },
];

/** A stand-in with the Run machine's shape where it matters: nested live states, then a final state. */
const toy = createMachine({
  initial: "live",
  states: {
    live: {
      initial: "resolving",
      states: {
        resolving: { on: { NEXT: "calling" } },
        calling: { initial: "streaming", states: { streaming: { on: { NEXT: "#done" } } } },
      },
    },
    done: { id: "done", type: "final" },
  },
});

describe("engine: live-run registry", () => {
  afterEach(() => clearSecrets());

  it("turns state values into paths from the root", () => {
    expect(statePath("ending")).to.deep.equal(["ending"]);
    expect(statePath({ live: { calling: "streaming" } })).to.deep.equal(["live", "calling", "streaming"]);
    expect(statePath({})).to.deep.equal([]);
  });

  it("follows a run's state changes and moves it to the recent runs when it ends", () => {
    const registry = new LiveRunRegistry(MODELS);
    const events: StatusEvent[] = [];
    registry.subscribe((e) => events.push(e));
    const actor = createActor(toy);
    registry.track("req-1", "conv-1", create(RequestedModelSchema, { modelId: "configured" }), actor);
    actor.start();
    actor.send({ type: "NEXT" });
    expect(registry.liveRuns()).to.have.length(1);
    expect(registry.liveRuns()[0]).to.include({ requestId: "req-1", model: "configured", endpoint: "anthropic" });
    expect(registry.liveRuns()[0]!.state).to.deep.equal(["live", "calling", "streaming"]);

    registerSecrets(["sk-leaked-in-error-0001"]);
    registry.ended(
      "req-1",
      { kind: "failed", cause: "provider", code: "unavailable", message: "bad sk-leaked-in-error-0001" },
      {
        inputTokens: 5,
      },
    );
    actor.send({ type: "NEXT" }); // later snapshots of an ended run change nothing
    expect(registry.liveRuns()).to.deep.equal([]);
    const [recent] = registry.recentRuns();
    expect(recent!.ending).to.deep.equal({
      kind: "failed",
      cause: "provider",
      code: "unavailable",
      message: "bad [redacted]",
    });
    expect(recent!.state).to.deep.equal(["failed"]);
    expect(recent!.usage).to.deep.equal({ input: 5 });
    expect(events.map((e) => (e.type === "run.state" ? e.state.join(".") : e.type))).to.deep.equal([
      "run.started",
      "live.calling.streaming",
      "run.ended",
    ]);
  });

  it("names an unresolvable model's endpoint instead of failing", () => {
    const registry = new LiveRunRegistry(MODELS);
    registry.track("req", "conv", create(RequestedModelSchema, { modelId: "unknown" }), createActor(toy));
    expect(registry.liveRuns()[0]!.endpoint).to.equal("unresolved");
  });

  it("keeps the newest RECENT_RUNS ended runs, newest first", () => {
    const registry = new LiveRunRegistry(MODELS);
    for (let i = 0; i < RECENT_RUNS + 5; i++) {
      registry.track(`req-${i}`, "conv", undefined, createActor(toy));
      registry.ended(`req-${i}`, { kind: "succeeded" }, {});
    }
    const recent = registry.recentRuns();
    expect(recent).to.have.length(RECENT_RUNS);
    expect(recent[0]!.requestId).to.equal(`req-${RECENT_RUNS + 4}`);
    expect(recent[RECENT_RUNS - 1]!.requestId).to.equal("req-5");
  });

  it("refuses a listener beyond MAX_LISTENERS and makes room when one leaves", () => {
    const registry = new LiveRunRegistry(MODELS);
    const leaves = Array.from({ length: MAX_LISTENERS }, () => registry.subscribe(() => {}));
    expect(leaves.every((leave) => leave !== undefined)).to.equal(true);
    expect(registry.subscribe(() => {})).to.equal(undefined);
    leaves[0]!();
    expect(registry.subscribe(() => {})).to.be.a("function");
  });
});
