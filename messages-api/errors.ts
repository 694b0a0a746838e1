// Anthropic error objects (`{type: "error", error: {type, message}}`) with the HTTP status Anthropic pairs with each
// type, so that Anthropic clients (Claude Code's retry logic among them) react as they would to Anthropic itself.
import { ProviderError } from "../providers/types.js";

export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

const STATUS: Record<AnthropicErrorType, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

export class MessagesApiError extends Error {
  override readonly name = "MessagesApiError";
  constructor(
    readonly type: AnthropicErrorType,
    message: string,
  ) {
    super(message);
  }

  get status(): number {
    return STATUS[this.type];
  }

  body(): { type: "error"; error: { type: AnthropicErrorType; message: string } } {
    return { type: "error", error: { type: this.type, message: this.message } };
  }
}

/**
 * A provider's failure in Anthropic's terms. The provider's own 401/403 is the gateway's configured key failing, not
 * the client's: it is an api_error, never authentication_error (which would send Claude Code to its login flow).
 * ProviderError messages are already free of the provider key.
 */
export function fromProviderError(error: ProviderError): MessagesApiError {
  return new MessagesApiError(providerErrorType(error.status), `provider error: ${error.message}`);
}

function providerErrorType(status: number | undefined): AnthropicErrorType {
  if (status === 400 || status === 422) return "invalid_request_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 503 || status === 529) return "overloaded_error";
  return "api_error";
}

export function toMessagesApiError(error: unknown): MessagesApiError {
  if (error instanceof MessagesApiError) return error;
  if (error instanceof ProviderError) return fromProviderError(error);
  return new MessagesApiError("api_error", "internal gateway error");
}
