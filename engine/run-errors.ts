import type { ConnectCode } from "../cursor/errors.js";

/** A run that cannot start, with the Connect code its EndStream carries (the Run machine reads `code`). */
export class RunSetupError extends Error {
  constructor(
    message: string,
    readonly code: Extract<ConnectCode, "invalid_argument" | "failed_precondition" | "internal">,
  ) {
    super(message);
    this.name = "RunSetupError";
  }
}
