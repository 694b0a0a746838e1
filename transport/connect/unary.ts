// Connect unary error responses (used by BidiAppend): the HTTP status carries the code's mapping and the body is
// the same error JSON as an end-stream error, without the `{"error": ...}` wrapper.
import { connectErrorJson, httpStatusForCode } from "./errors.js";
import type { RpcError } from "../../cursor/errors.js";

export function unaryErrorBody(err: RpcError): { status: number; body: string } {
  return { status: httpStatusForCode(err.code), body: JSON.stringify(connectErrorJson(err)) };
}
