// What the status page and its JSON API show (docs/status-api.md). The engine supplies a StatusSource; this folder
// only serves it, so it imports nothing of the engine, the store or the AEP wiring.

/** Token counts as providers report them; `input` includes prompt-cache reads. */
export interface TokenCounts {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  reasoning?: number;
}

export interface LiveRun {
  requestId: string;
  conversationId: string;
  /** The model id Cursor asked for. */
  model: string;
  /** The endpoint kind serving it: openai-chat, openai-responses or anthropic. */
  endpoint: string;
  startedAt: number;
  /** The Run machine's state as a path from the root, e.g. ["live", "calling", "streaming"]. */
  state: string[];
  stateSince: number;
}

/** How a run ended: RunEnd's kind with its cause, Connect code and message (secrets redacted). */
export interface RunEnding {
  kind: "succeeded" | "failed" | "canceled";
  cause?: string;
  code?: string;
  message?: string;
}

export interface RecentRun extends LiveRun {
  endedAt: number;
  ending: RunEnding;
  usage: TokenCounts;
}

export type StatusEvent =
  | { type: "run.started"; run: LiveRun }
  | { type: "run.state"; requestId: string; state: string[]; at: number }
  | { type: "run.ended"; run: RecentRun };

export interface UsageRow {
  frontDoor: string;
  model: string;
  day: string;
  calls: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface ConversationRow {
  conversationId: string;
  runs: number;
  turns: number;
  lastModel: string;
  lastActivityAt: number;
}

export interface AepSessionRow {
  sessionId: string;
  sessionKey?: string;
  worker: string;
  state: string;
  attached: boolean;
}

export interface StatusSource {
  liveRuns(): LiveRun[];
  recentRuns(): RecentRun[];
  /** Live events until the returned function is called; undefined when too many already listen. */
  subscribe(listener: (event: StatusEvent) => void): (() => void) | undefined;
  conversations(page: { limit: number; offset: number }): Promise<{ total: number; items: ConversationRow[] }>;
  usage(sinceDay: string, limit: number): Promise<UsageRow[]>;
  /** Undefined when the AEP listener is off. */
  aepSessions(): AepSessionRow[] | undefined;
  /** The resolved configuration; the API masks every secret in it before it leaves. */
  config(): unknown;
  version: string;
}
