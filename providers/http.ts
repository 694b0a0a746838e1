// The HTTP edge every endpoint adapter shares: POST a JSON body, wait for headers, decode the SSE body. node:http
// rather than fetch: no web-stream layers between a network read and its ModelEvents (issue 17). One AbortSignal
// covers both the header wait and the body read (docs/protocol/cursor-run.md §7.3), and no error message ever
// carries the API key (docs/protocol/README.md §6.8).
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { redact } from "../log/logger.js";
import { eventStreamParser } from "./sse.js";
import { ProviderError, type ModelEvent, type ModelEventSink } from "./types.js";

export interface EventStreamRequest {
  url: string;
  headers: Record<string, string>;
  /** The JSON body's UTF-8, in the pieces it is written in (request-body.ts). */
  body: readonly Uint8Array[];
  /** The credential sent in `headers`; it is redacted from every error message. */
  secret: string;
}

/** What the read loop needs of a provider's answer. */
export interface ProviderResponse {
  status: number;
  contentType: string;
  body: Readable;
}

/** Sends one request and resolves with its response head; until then the signal aborts it. */
export type HttpPost = (request: EventStreamRequest, signal: AbortSignal) => Promise<ProviderResponse>;

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
 * One model call: POST, then decode the event stream into ModelEvents for `sink`; every failure becomes a
 * ProviderError. The request is built first, so a projection that refuses its history fails the call like any other.
 */
export async function streamModelEvents(
  buildRequest: () => EventStreamRequest,
  decoder: StreamDecoder,
  signal: AbortSignal,
  post: HttpPost,
  sink: ModelEventSink,
): Promise<void> {
  let secret = "";
  try {
    const request = buildRequest();
    secret = request.secret;
    const response = await post(request, signal);
    // Attached for exactly as long as the body is read: an abort after its release would reach a pooled connection.
    // A pass stopped once the terminal event is in (the ModelCall stops it on `done`) keeps its connection for the
    // next call: release() drains the rest of the body instead.
    const abort = () => {
      if (!decoder.complete) response.body.destroy(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
    if (signal.aborted) abort();
    try {
      await readEvents(await eventStreamBody(response, request), decoder, signal, sink);
    } finally {
      signal.removeEventListener("abort", abort);
    }
  } catch (error) {
    throw toProviderError(error, signal, secret);
  }
}

/**
 * Decodes each read of the body as it arrives and hands its events to `sink` in that read's turn. Settles once the
 * terminal event went out (resolved), or on a failure, a bare EOF or an abort (rejected: the caller's abort destroys
 * the body).
 */
function readEvents(body: Readable, decoder: StreamDecoder, signal: AbortSignal, sink: ModelEventSink): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const parser = eventStreamParser();
    let settled = false;
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      body.off("data", onData).off("end", onEnd).off("error", settle).off("close", onClose);
      release(body, decoder.complete);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (text: string) => {
      try {
        for (const message of parser.feed(text)) {
          for (const event of decoder.accept(message.data, message.event)) {
            // Events already decoded from one read must not outlive a cancellation, the sink's own included.
            signal.throwIfAborted();
            sink(event);
          }
          if (decoder.failure) throw decoder.failure;
          if (decoder.complete) return settle();
        }
      } catch (error) {
        settle(error);
      }
    };
    const onEnd = () => {
      try {
        decoder.endOfStream();
      } catch (error) {
        settle(error);
      }
    };
    const onClose = () => settle(new Error("the response body closed before its end"));
    body.on("data", onData).once("end", onEnd).once("error", settle).once("close", onClose);
    // Destroyed before it was handed over (an abort while the error check ran): nothing more will come.
    if (body.destroyed) settle(body.errored ?? new Error("the response body closed before its end"));
  });
}

/** POST over node:http or node:https; the agent keeps connections alive between calls. */
export const httpPost: HttpPost = (request, signal) =>
  new Promise((resolve, reject) => {
    const url = new URL(request.url);
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const length = request.body.reduce((sum, piece) => sum + piece.byteLength, 0);
    const headers = { ...request.headers, "content-length": String(length) };
    const abort = () => req.destroy(signal.reason);
    const req = send(url, { method: "POST", headers }, (res) => {
      // From here on the read loop answers the signal, for exactly as long as it reads the body.
      signal.removeEventListener("abort", abort);
      resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"] ?? "", body: res });
    });
    signal.addEventListener("abort", abort, { once: true });
    // Also the listener for failures after the head arrived: those reach the body's reader as its own error.
    req.on("error", (error) => {
      signal.removeEventListener("abort", abort);
      reject(error);
    });
    if (signal.aborted) abort();
    else {
      // Corked, the pieces leave in one writev.
      req.cork();
      for (const piece of request.body) req.write(piece);
      req.end();
    }
  });

/**
 * After the terminal event the rest of the body (usually just its end) is drained, so the connection can serve the
 * next call; a body still open a turn later, or one left for any other reason, is dropped with its connection.
 */
function release(body: Readable, complete: boolean): void {
  if (!complete) {
    body.destroy();
    return;
  }
  body.resume();
  setImmediate(() => {
    if (!body.readableEnded) body.destroy();
  });
}

/** Longest slice of a provider's error body quoted in an error message. */
const MAX_QUOTED_ERROR = 500;

/** The event-stream body as text, or a ProviderError for an answer that is not one. */
async function eventStreamBody(response: ProviderResponse, request: EventStreamRequest): Promise<Readable> {
  const target = `POST ${describeUrl(request.url)}`;
  if (response.status < 200 || response.status > 299) {
    // Redacted before it is shortened: a key cut at the quote's end would otherwise leak its first characters.
    const message = `HTTP ${response.status} from ${target}: ${providerErrorText(redact(await readErrorBody(response.body), request.secret))}`;
    throw new ProviderError(redact(message, request.secret), "error", response.status);
  }
  // Some gateways answer 200 with a JSON error instead of a stream; say so instead of reporting a bare EOF.
  if (response.contentType.includes("application/json")) {
    const message = `expected text/event-stream from ${target}, got JSON: ${providerErrorText(redact(await readErrorBody(response.body), request.secret))}`;
    throw new ProviderError(redact(message, request.secret), "error");
  }
  return response.body.setEncoding("utf8");
}

/** The start of an error body: far more than the quote needs, never the whole of an endless or huge one. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

async function readErrorBody(body: Readable): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const part of body as AsyncIterable<Buffer>) {
      parts.push(part);
      size += part.byteLength;
      if (size >= MAX_ERROR_BODY_BYTES) break;
    }
  } finally {
    body.destroy();
  }
  return Buffer.concat(parts).subarray(0, MAX_ERROR_BODY_BYTES).toString("utf8");
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
  // A connection to a name with several addresses fails as an AggregateError with no message of its own.
  if (error instanceof AggregateError && error.message === "") return error.errors.map(describeFailure).join("; ");
  return error.message;
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
