// The errors a run or request ends with (docs/protocol): a Connect code and, optionally, the aiserver.v1.ErrorDetails
// Cursor renders. Pure values; transport/connect encodes them.
import { create } from "@bufbuild/protobuf";
import {
  CustomErrorDetailsSchema,
  type ErrorDetails,
  ErrorDetails_Error,
  ErrorDetailsSchema,
} from "../proto/gen/aiserver/v1/aiserver_pb.js";

export type ConnectCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

export class RpcError extends Error {
  override readonly name = "RpcError";

  constructor(
    message: string,
    readonly code: ConnectCode,
    readonly details?: ErrorDetails,
  ) {
    super(message);
  }
}

/**
 * The ErrorDetails the reference server attaches to provider failures (docs/protocol/cursor-transport.md §7.3). Other
 * retryable server-side
 * failures (a checkpoint the client did not acknowledge, a run over its limits) use the same shape with their own
 * error value.
 */
export function providerErrorDetails(
  detail: string,
  error: ErrorDetails_Error = ErrorDetails_Error.PROVIDER_ERROR,
): ErrorDetails {
  return create(ErrorDetailsSchema, {
    error,
    details: create(CustomErrorDetailsSchema, {
      title: "Server Error",
      detail,
      isRetryable: true,
      showRequestId: true,
      // false keeps Cursor from raising a global toast; the Composer still shows the inline error + retry.
      shouldShowImmediateError: false,
    }),
    isExpected: false,
  });
}

/** How a stream ends: success is exactly `{}` on the wire; failure carries the error. */
export type EndStream = { ok: true } | { ok: false; error: RpcError };
