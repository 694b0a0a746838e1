// Server-Sent Events framing for provider streams, on top of eventsource-parser. Endpoint-neutral: each
// adapter decides what its `data` payloads mean and when its stream is complete.
import { createParser, type EventSourceMessage, type ParseError } from "eventsource-parser";
import { ProviderError } from "./types.js";

/**
 * Yields every complete SSE event of `body` in order and returns at EOF. An event cut off by EOF (no
 * terminating blank line) is not dispatched, as the SSE spec says; the adapter then sees a bare EOF.
 * Stopping the iteration early (after an end marker) cancels the body so the connection is released.
 */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<EventSourceMessage> {
  const ready: EventSourceMessage[] = [];
  let malformed: ParseError | undefined;
  const parser = createParser({
    onEvent: (event) => ready.push(event),
    // Unknown field names are ignored by the SSE spec; anything else (an oversized line) is a broken stream.
    onError: (error) => {
      if (error.type !== "unknown-field") malformed ??= error;
    },
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      parser.feed(done ? decoder.decode() : decoder.decode(value, { stream: true }));
      if (malformed !== undefined) throw new ProviderError(`malformed event stream: ${malformed.message}`, "error");
      yield* ready.splice(0);
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
