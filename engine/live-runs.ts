// The live-run registry behind the status page (docs/status-api.md §2): every live Cursor run with the state its Run
// machine is in, read from the actor's snapshots, and a bounded ring of recent runs with their endings and usage.
// The agent service tells it when a run starts and ends; it never changes a run.
import type { RunEnd } from "../machines/run-ends.js";
import type { RequestedModel } from "../proto/gen/agent/v1/agent_pb.js";
import type { Usage } from "../providers/types.js";
import { redact } from "../log/logger.js";
import type { LiveRun, RecentRun, RunEnding, StatusEvent } from "../status/types.js";
import type { ModelConfig } from "./config.js";
import { resolveModel } from "./models.js";

/** Ended runs kept for the page, newest last. */
export const RECENT_RUNS = 100;
/** Live-event listeners at once (each is an open SSE response). */
export const MAX_LISTENERS = 32;
/** Client-supplied and error texts are cut to this many characters. */
const MAX_TEXT = 500;

/** What the agent service reports; the registry is optional there. */
export interface RunObserver {
  track(requestId: string, conversationId: string, requested: RequestedModel | undefined, actor: RunActor): void;
  ended(requestId: string, end: RunEnd, usage: Usage): void;
}

/** The part of a Run actor the registry reads. */
interface RunActor {
  getSnapshot(): { value: unknown };
  subscribe(observer: { next(snapshot: { value: unknown }): void }): { unsubscribe(): void };
}

export class LiveRunRegistry implements RunObserver {
  private readonly live = new Map<string, { run: LiveRun; stop(): void }>();
  private readonly recent: RecentRun[] = [];
  private readonly listeners = new Set<(event: StatusEvent) => void>();

  constructor(private readonly models: readonly ModelConfig[]) {}

  track(requestId: string, conversationId: string, requested: RequestedModel | undefined, actor: RunActor): void {
    const now = Date.now();
    const run: LiveRun = {
      requestId: clip(requestId),
      conversationId: clip(conversationId),
      model: clip(requested?.modelId ?? ""),
      endpoint: this.endpointOf(requested),
      startedAt: now,
      state: statePath(actor.getSnapshot().value),
      stateSince: now,
    };
    const subscription = actor.subscribe({
      next: (snapshot) => {
        const state = statePath(snapshot.value);
        if (state.join(".") === run.state.join(".")) return;
        run.state = state;
        run.stateSince = Date.now();
        this.emit({ type: "run.state", requestId, state, at: run.stateSince });
      },
    });
    this.live.get(requestId)?.stop();
    this.live.set(requestId, { run, stop: () => subscription.unsubscribe() });
    this.emit({ type: "run.started", run: { ...run } });
  }

  ended(requestId: string, end: RunEnd, usage: Usage): void {
    const entry = this.live.get(requestId);
    if (!entry) return;
    entry.stop();
    this.live.delete(requestId);
    // The Run machine's final states are named after RunEnd's kinds and finish runs on entry to them, before their
    // snapshot is published: the ending names the state the run ended in.
    const endedAt = Date.now();
    const run: RecentRun = {
      ...entry.run,
      state: [end.kind],
      stateSince: endedAt,
      endedAt,
      ending: endingOf(end),
      usage: countsOf(usage),
    };
    this.recent.push(run);
    if (this.recent.length > RECENT_RUNS) this.recent.shift();
    this.emit({ type: "run.ended", run });
  }

  liveRuns(): LiveRun[] {
    return [...this.live.values()].map(({ run }) => ({ ...run }));
  }

  /** Newest first. */
  recentRuns(): RecentRun[] {
    return [...this.recent].reverse();
  }

  /** Undefined when MAX_LISTENERS already listen. */
  subscribe(listener: (event: StatusEvent) => void): (() => void) | undefined {
    if (this.listeners.size >= MAX_LISTENERS) return undefined;
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(event: StatusEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private endpointOf(requested: RequestedModel | undefined): string {
    try {
      return resolveModel(this.models, requested).endpoint.kind;
    } catch {
      return "unresolved"; // the run's own setup reports why
    }
  }
}

/** An XState state value as a path from the root: "a" → ["a"], { a: { b: "c" } } → ["a", "b", "c"]. */
export function statePath(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value && typeof value === "object") {
    const [key] = Object.keys(value);
    if (key !== undefined) return [key, ...statePath((value as Record<string, unknown>)[key])];
  }
  return [];
}

function endingOf(end: RunEnd): RunEnding {
  switch (end.kind) {
    case "succeeded":
      return { kind: "succeeded" };
    case "canceled":
      return { kind: "canceled", cause: end.cause, code: "canceled", message: clip(redact(end.reason)) };
    case "failed":
      return { kind: "failed", cause: end.cause, code: end.code, message: clip(redact(end.message)) };
  }
}

function countsOf(usage: Usage): RecentRun["usage"] {
  const pairs = [
    ["input", usage.inputTokens],
    ["output", usage.outputTokens],
    ["cacheRead", usage.cacheReadTokens],
    ["cacheWrite", usage.cacheWriteTokens],
    ["reasoning", usage.reasoningTokens],
  ] as const;
  return Object.fromEntries(pairs.filter(([, v]) => v !== undefined));
}

function clip(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}
