// How a run can end (docs/protocol/cursor-run.md §10, §10.2–§10.6; docs/protocol/cursor-transport.md §7): every
// failure and cancel cause, named once. The Run machine draws one edge per cause from its `ending` decision state,
// the engine maps the cause to the EndStream, and the path tests check that every cause here is reached.
import type { ConnectCode } from "../cursor/errors.js";
import type { ModelCallOutput } from "./model-call-contract.js";
import type { ToolRoundOutput } from "./tool-round.js";

/** Why a run failed, with the Connect code its EndStream carries. */
export const failureCodes = {
  /** The gateway itself broke: the store, a setup step, or (engine-side) an exception that crashed the run. */
  setup: "internal",
  /** The request asks for something this gateway does not run, e.g. unsupported credentials. */
  unsupported: "failed_precondition",
  /** The run request itself is malformed. */
  bad_request: "invalid_argument",
  /** A get_blob_result is missing or does not hash to its blob id. */
  bad_blob_reply: "invalid_argument",
  /** get_blob_args not answered before the KV deadline. */
  blob_deadline: "invalid_argument",
  /** The provider pass failed: HTTP or stream error, bare EOF, finish length, out-of-contract events. */
  provider: "unavailable",
  /** The model called a tool outside the run's manifest. */
  model_protocol: "invalid_argument",
  /** An Exec message or interaction response for an id this run never issued, outside a tool round. */
  unknown_id: "invalid_argument",
  /** A tool round hit a client protocol error (exec throw, early stream_close, wrong result branch, unknown id). */
  exec_protocol: "invalid_argument",
  /** A tool round's staged or settled checkpoint, or a result commit, failed (SET refused, ACK deadline, store). */
  round_checkpoint: "unavailable",
  /** The checkpoint carrying a new summary failed (SET refused, ACK deadline, store). */
  summary_checkpoint: "unavailable",
  /** The final checkpoint failed (SET refused, ACK deadline, store). */
  final_checkpoint: "unavailable",
  /** The run's stream hit the backlog bound. */
  backlog: "resource_exhausted",
} as const satisfies Record<string, ConnectCode>;

export type FailureCause = keyof typeof failureCodes;
export const failureCauses = Object.keys(failureCodes) as FailureCause[];

/** Why a run was canceled; every cancel ends with the `canceled` code (Cursor shows no error). */
/** `parent`: a subagent's run, because its parent was canceled or canceled it (docs/protocol/cursor-run.md §13). */
export const cancelCauses = ["client", "superseded", "subscriber_gone", "shutdown", "parent"] as const;
export type CancelCause = (typeof cancelCauses)[number];

/** What the run ended as; the engine turns it into the EndStream and the terminal store commit. */
export type RunEnd =
  | { kind: "succeeded" }
  | { kind: "failed"; cause: FailureCause; code: (typeof failureCodes)[FailureCause]; message: string }
  | { kind: "canceled"; cause: CancelCause; reason: string };

export const failure = (cause: FailureCause, message: string): RunEnd => ({
  kind: "failed",
  cause,
  code: failureCodes[cause],
  message,
});

export const canceled = (cause: CancelCause, reason: string): RunEnd => ({ kind: "canceled", cause, reason });

/** Errors thrown by the engine's setup steps carry their own Connect code (see engine/run-errors). */
export function setupFailure(error: unknown): RunEnd {
  const e = error as { code?: string; message?: string };
  const cause: FailureCause =
    e.code === "invalid_argument" ? "bad_request" : e.code === "failed_precondition" ? "unsupported" : "setup";
  return failure(cause, e.message ?? String(error));
}

/** A failed model call: the model broke the run's manifest, or the provider pass failed. */
export function modelFailure(output: ModelCallOutput): RunEnd {
  if (output.ok) return failure("provider", "unexpected model output");
  return output.failure.kind === "protocol"
    ? failure("model_protocol", `protocol error: ${output.failure.message}`)
    : failure("provider", output.failure.message);
}

export function roundFailure(cause: "exec_protocol" | "round_checkpoint", output: ToolRoundOutput): RunEnd {
  const message = output.outcome.kind === "ok" ? "tool round failed" : output.outcome.message;
  return failure(cause, cause === "exec_protocol" ? `protocol error: ${message}` : message);
}
