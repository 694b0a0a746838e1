// The Connect error model (seed 003 §26.2–26.3): one typed error carrying a Connect code and, optionally, the
// aiserver.v1.ErrorDetails Cursor renders. Pure values and mappings; no I/O.
import { create, toBinary } from "@bufbuild/protobuf";
import {
  CustomErrorDetailsSchema,
  type ErrorDetails,
  ErrorDetails_Error,
  ErrorDetailsSchema,
} from "../../proto/gen/aiserver/v1/aiserver_pb.js";

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

// Connect protocol's code → HTTP status table; only unary responses use it (streams always answer 200).
const httpStatusByCode: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

export function httpStatusForCode(code: ConnectCode): number {
  return httpStatusByCode[code];
}

/**
 * The ErrorDetails the reference server attaches to provider failures (seed 003 §26.3). Other retryable server-side
 * failures (a checkpoint the client did not acknowledge, a run over its limits) use the same shape with their own
 * error value.
 */
export function providerErrorDetails(detail: string, error: ErrorDetails_Error = ErrorDetails_Error.PROVIDER_ERROR): ErrorDetails {
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

/** Error JSON shared by the end-stream frame and unary error bodies. */
export interface ConnectErrorJson {
  code: ConnectCode;
  message?: string;
  details?: Array<{ type: string; value: string }>;
}

const errorDetailsTypeName = ErrorDetailsSchema.typeName;

export function connectErrorJson(err: RpcError): ConnectErrorJson {
  const json: ConnectErrorJson = { code: err.code };
  if (err.message !== "") json.message = err.message;
  if (err.details !== undefined) {
    json.details = [{ type: errorDetailsTypeName, value: base64NoPadding(toBinary(ErrorDetailsSchema, err.details)) }];
  }
  return json;
}

// Connect requires standard base64 without `=` padding for detail values (seed 003 §26.3).
function base64NoPadding(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64").replace(/=+$/, "");
}
