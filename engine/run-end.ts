// RunEnd → Connect EndStream (seed 003 §26.2–26.6): success is `{}`; provider-side failures carry unavailable +
// aiserver.v1.ErrorDetails; protocol errors invalid_argument; cancel is `canceled` so Cursor does not show an error.
import type { RunEnd } from "../machines/run.js";
import type { EndStream } from "../transport/connect/end-stream.js";
import { ConnectError, providerErrorDetails } from "../transport/connect/errors.js";

export function endStreamFor(end: RunEnd): EndStream {
  switch (end.kind) {
    case "succeeded":
      return { ok: true };
    case "canceled":
      return { ok: false, error: new ConnectError(end.reason, "canceled") };
    case "failed":
      return {
        ok: false,
        error: new ConnectError(end.message, end.code, end.code === "unavailable" ? providerErrorDetails(end.message) : undefined),
      };
  }
}
