// The neutral vocabulary between a session's core (aep/) and a worker driver (workers/<kind>/).
// Neither AEP nor a worker's own wire format leaks across this line: the AEP layer maps these events to envelopes,
// a driver maps its process's frames to them. Additive changes only; both sides compile against this file.

/** Every worker family the gateway can run; the AEP `init.worker` field and the config's `workers:` keys. */
export const WORKER_KINDS = ["claude-code", "codex", "acp"] as const;
export type WorkerKind = (typeof WORKER_KINDS)[number];
/** The worker a session gets when its `init` names none. */
export const DEFAULT_WORKER: WorkerKind = "claude-code";

/** How a worker turn ended. `stopped` = ended by an interrupt the core asked for. */
export type TurnOutcome = "completed" | "failed" | "stopped" | "api_error" | "limit";

export interface TurnUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly cacheReadTokens?: number;
  readonly cacheWriteTokens?: number;
  readonly costUsd?: number;
  readonly durationMs?: number;
  readonly numTurns?: number;
}

/** A file a tool touches (ACP `ToolCallLocation`). */
export interface FileLocation {
  readonly path: string;
  readonly line?: number;
}

/** A structured file edit (ACP `Diff` content); `oldText` is absent for a new file. */
export interface FileDiff {
  readonly path: string;
  readonly oldText?: string;
  readonly newText: string;
}

/** Display fields ACP agents give their tool calls (docs/protocol/aep.md §4, the ACP extension fields). */
export interface ToolDisplay {
  readonly title?: string;
  /** read, edit, delete, move, search, execute, think, fetch, switch_mode, other. */
  readonly kind?: string;
  readonly locations?: readonly FileLocation[];
}

export interface PlanEntry {
  readonly content: string;
  readonly priority: string;
  readonly status: string;
}

/** What the worker asks the user; `question` = a multiple-choice question (AskUserQuestion). */
export type InteractionKind = "permission" | "question" | "elicitation";

export type WorkerEvent =
  /** The worker process is up and accepts input (worker's own session id, model, tools, permission mode). */
  | {
      type: "worker.ready";
      workerSessionId: string;
      model?: string;
      tools?: readonly string[];
      permissionMode?: string;
      version?: string;
    }
  /** The worker holds the input (durably in its queue). */
  | { type: "input.queued"; inputId: string }
  /** The worker began working on the input: as a new turn, or folded into the running one. */
  | { type: "input.started"; inputId: string; mode: "turn" | "injected" }
  | { type: "input.completed"; inputId: string }
  | { type: "turn.started"; inputId?: string }
  | { type: "text.delta"; blockId: string; text: string }
  /** `abandoned`: the worker retracted the block (its stream broke and the call was retried); not part of the answer. */
  | { type: "text.completed"; blockId: string; text: string; abandoned?: boolean }
  | { type: "reasoning.delta"; blockId: string; text: string }
  | { type: "reasoning.completed"; blockId: string; text: string; abandoned?: boolean }
  | ({ type: "tool.called"; id: string; name: string; input: unknown } & ToolDisplay)
  /** A running tool's intermediate state (ACP `tool_call_update` before it completes). */
  | ({ type: "tool.updated"; id: string; status: string; content?: unknown; diff?: FileDiff } & ToolDisplay)
  | { type: "tool.result"; id: string; output: string; isError: boolean; diff?: FileDiff }
  /** The worker's whole current plan (each update replaces the previous one). */
  | { type: "plan.updated"; entries: readonly PlanEntry[] }
  | { type: "mode.updated"; mode: string }
  | { type: "interaction.requested"; id: string; kind: InteractionKind; payload: Record<string, unknown> }
  | { type: "interaction.withdrawn"; id: string }
  /** Progress the client may show but need not understand (retries, status, raw frames). */
  | { type: "step"; name: string; detail?: Record<string, unknown> }
  | { type: "raw"; frame: unknown }
  | { type: "context.usage"; detail: Record<string, unknown> }
  | { type: "mcp.status"; servers: readonly unknown[] }
  /** The worker reported an error inside a turn (an API error message, not text). */
  | { type: "turn.error"; code: string; message: string }
  | { type: "turn.finished"; outcome: TurnOutcome; usage?: TurnUsage; message?: string; errorCode?: string }
  /** The process is gone. `crashed` = a signal, or an exit while a turn was open. */
  | { type: "worker.exited"; code: number | null; signal: string | null; crashed: boolean };

/** The answer to an interaction, in neutral form; the driver writes it in the shape its worker accepts. */
export type InteractionAnswer =
  | { kind: "permission"; allowed: boolean; reason?: string }
  | { kind: "question"; answers: Record<string, string> }
  | { kind: "elicitation"; action: "accept" | "decline" | "cancel"; content?: Record<string, unknown> };

export interface WorkerStartOptions {
  /** The session's worker kind (a stored string: a kind this gateway no longer knows fails the start). */
  readonly worker?: string;
  /** Directory the worker runs in; HOME too unless `env.HOME` is given. */
  readonly workdir: string;
  readonly home?: string;
  /** Worker-side session to continue (`--resume`) or to create (`--session-id`). */
  readonly workerSessionId: string;
  readonly resume: boolean;
  readonly permissionMode?: string;
  readonly command?: string;
  readonly args?: readonly string[];
  /** Extra environment; values are secrets and are never logged. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * One worker process. Every event carries the generation of the process that produced it, so the core can drop
 * late events of a replaced process.
 */
export interface Worker {
  readonly generation: number;
  /** Writes the input; resolves when the line is written to the process (not when the worker accepts it). */
  send(input: { inputId: string; content: string }): Promise<void>;
  answer(interactionId: string, answer: InteractionAnswer): Promise<void>;
  /** Asks the worker to stop the current turn; resolves true when it acknowledged within the bound. */
  interrupt(): Promise<boolean>;
  /** Finish then exit (EOF); kills after a grace period. */
  close(): Promise<void>;
  /** Kills the process group at once. */
  kill(): void;
  /**
   * Answers a worker_command (docs/protocol/aep.md §3) with neutral events; undefined for a command the worker does
   * not answer, a rejection when it failed to. Optional: a worker kind without it answers none.
   */
  command?(command: string): Promise<WorkerEvent[] | undefined>;
}

export type WorkerListener = (event: WorkerEvent, generation: number) => void;

export interface WorkerFactory {
  start(options: WorkerStartOptions, listener: WorkerListener): Worker;
}
