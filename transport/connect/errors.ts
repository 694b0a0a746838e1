// The Connect error encoding (docs/protocol/cursor-transport.md §7.2–§7.3): the error JSON of end-stream frames and
// unary bodies, and the HTTP status of a unary error. Pure mappings; no I/O.
import { toBinary } from "@bufbuild/protobuf";
import { ErrorDetailsSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import type { ConnectCode, RpcError } from "../../cursor/errors.js";

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

// Connect requires standard base64 without `=` padding for detail values (docs/protocol/cursor-transport.md §7.3).
function base64NoPadding(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64").replace(/=+$/, "");
}
