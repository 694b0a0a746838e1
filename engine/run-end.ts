// RunEnd → Connect EndStream (docs/protocol/cursor-transport.md §7; docs/protocol/cursor-run.md §10.2–§10.6): success
// is `{}`; provider-side failures carry unavailable + aiserver.v1.ErrorDetails; protocol errors invalid_argument;
// cancel is `canceled` so Cursor does not show an error.
import type { RunEnd } from "../machines/run-ends.js";
import type { EndStream } from "../cursor/errors.js";
import { ErrorDetails_Error } from "../proto/gen/aiserver/v1/aiserver_pb.js";
import { RpcError, providerErrorDetails } from "../cursor/errors.js";

/** Which ErrorDetails value each retryable failure cause carries; protocol and setup errors carry none. */
const detailsFor: Partial<Record<Extract<RunEnd, { kind: "failed" }>["cause"], ErrorDetails_Error>> = {
  provider: ErrorDetails_Error.PROVIDER_ERROR,
  round_checkpoint: ErrorDetails_Error.INTERNAL,
  summary_checkpoint: ErrorDetails_Error.INTERNAL,
  final_checkpoint: ErrorDetails_Error.INTERNAL,
  backlog: ErrorDetails_Error.RESOURCE_EXHAUSTED,
};

export function endStreamFor(end: RunEnd): EndStream {
  switch (end.kind) {
    case "succeeded":
      return { ok: true };
    case "canceled":
      return { ok: false, error: new RpcError(end.reason, "canceled") };
    case "failed": {
      const error = detailsFor[end.cause];
      return {
        ok: false,
        error: new RpcError(
          end.message,
          end.code,
          error === undefined ? undefined : providerErrorDetails(end.message, error),
        ),
      };
    }
  }
}
