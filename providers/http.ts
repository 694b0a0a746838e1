// The HTTP edge every endpoint adapter shares: POST a JSON body, wait for headers, hand back the SSE body.
// One AbortSignal covers both the header wait and the body read (docs/protocol/cursor-run.md §7.3), and no error
// message ever carries the API key (docs/protocol/README.md §6.8).
import { redact } from "../log/logger.js";
import { readEventStream } from "./sse.js";
import { ProviderError, type ModelEvent } from "./types.js";

export interface EventStreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The credential sent in `headers`; it is redacted from every error message. */
  secret: string;
}

/** What each endpoint's stream decoder offers the shared read loop. */
export interface StreamDecoder {
  accept(data: string, event: string | undefined): Iterable<ModelEvent>;
  /** True once the terminal event was accepted: the loop stops reading. */
  readonly complete: boolean;
  /** A failure found after the events before it went out (a call cut short still reports its usage). */
  readonly failure?: ProviderError | undefined;
  /** The body ended before the terminal event: a bare EOF is a failure, never a normal done
   * (docs/protocol/cursor-run.md §7.3). */
  endOfStream(): never;
}

/**
 * One model call: POST, then decode the event stream into ModelEvents; every failure becomes a ProviderError. The
 * request is built on the first read, so a projection that refuses its history fails the iteration like any other.
 */
export async function* streamModelEvents(
  buildRequest: () => EventStreamRequest,
  decoder: StreamDecoder,
  signal: AbortSignal,
  fetchImpl: typeof fetch,
): AsyncGenerator<ModelEvent> {
  let secret = "";
  try {
    const request = buildRequest();
    secret = request.secret;
    const body = await openEventStream(request, signal, fetchImpl);
    for await (const message of readEventStream(body)) {
      // Events already buffered from one network read must not outlive a cancellation.
      signal.throwIfAborted();
      yield* decoder.accept(message.data, message.event);
      if (decoder.failure) throw decoder.failure;
      if (decoder.complete) return;
    }
    decoder.endOfStream();
  } catch (error) {
    throw toProviderError(error, signal, secret);
  }
}

/** Longest slice of a provider's error body quoted in an error message. */
const MAX_QUOTED_ERROR = 500;

/** POSTs the request and returns the event-stream body, or throws ProviderError (never returns a failed response). */
async function openEventStream(
  request: EventStreamRequest,
  signal: AbortSignal,
  fetchImpl: typeof fetch = fetch,
): Promise<ReadableStream<Uint8Array>> {
  const response = await fetchImpl(request.url, {
    method: "POST",
    headers: request.headers,
    body: request.body,
    signal,
  });
  const target = `POST ${describeUrl(request.url)}`;
  if (!response.ok) {
    // Redacted before it is shortened: a key cut at the quote's end would otherwise leak its first characters.
    const message = `HTTP ${response.status} from ${target}: ${providerErrorText(redact(await readErrorBody(response), request.secret))}`;
    throw new ProviderError(redact(message, request.secret), "error", response.status);
  }
  // Some gateways answer 200 with a JSON error instead of a stream; say so instead of reporting a bare EOF.
  if ((response.headers.get("content-type") ?? "").includes("application/json")) {
    const message = `expected text/event-stream from ${target}, got JSON: ${providerErrorText(redact(await readErrorBody(response), request.secret))}`;
    throw new ProviderError(redact(message, request.secret), "error");
  }
  if (response.body === null) {
    throw new ProviderError(`empty response body from ${target}`, "error");
  }
  return response.body;
}

/** The start of an error body: far more than the quote needs, never the whole of an endless or huge one. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

async function readErrorBody(response: Response): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ERROR_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.byteLength;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(Buffer.concat(parts).subarray(0, MAX_ERROR_BODY_BYTES));
}

/**
 * Normalises anything thrown while calling or reading a provider into a ProviderError: cancellation wins
 * (reason "aborted"), our own ProviderErrors keep their reason and status, the rest become reason "error".
 */
function toProviderError(error: unknown, signal: AbortSignal, secret: string): ProviderError {
  if (error instanceof ProviderError) {
    const message = redact(error.message, secret);
    return message === error.message ? error : new ProviderError(message, error.reason, error.status);
  }
  if (signal.aborted) return new ProviderError("provider request aborted", "aborted");
  return new ProviderError(redact(`provider request failed: ${describeFailure(error)}`, secret), "error");
}

/** The provider's own error message when the body is the usual `{error: {message}}` JSON, else the raw text. */
function providerErrorText(body: string): string {
  const trimmed = body.trim();
  try {
    const parsed: unknown = JSON.parse(trimmed);
    const message = errorMessageOf(parsed);
    if (message !== undefined) return quote(message);
  } catch {
    // Not JSON (an HTML error page, plain text): quote it as it is.
  }
  return trimmed === "" ? "(empty body)" : quote(trimmed);
}

function errorMessageOf(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  const error = value.error;
  if (typeof error === "string") return error;
  if (isRecord(error) && typeof error.message === "string") return error.message;
  return typeof value.message === "string" ? value.message : undefined;
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // undici reports network failures as "fetch failed" with the useful part (ECONNREFUSED, ...) in `cause`.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

function describeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

function quote(text: string): string {
  return text.length > MAX_QUOTED_ERROR ? `${text.slice(0, MAX_QUOTED_ERROR)}…` : text;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
