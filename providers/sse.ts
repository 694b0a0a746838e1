// Server-Sent Events framing for provider streams, on top of eventsource-parser. Endpoint-neutral: each
// adapter decides what its `data` payloads mean and when its stream is complete.
import { createParser, type EventSourceMessage, type ParseError } from "eventsource-parser";
import { ProviderError } from "./types.js";

export interface EventStreamParser {
  /**
   * The events completed by this piece of the body, in order. An event cut off by EOF (no terminating blank
   * line) is never completed, as the SSE spec says; the adapter then sees a bare EOF.
   */
  feed(text: string): EventSourceMessage[];
}

/** Parses the body as it is read, synchronously: one network read's events are decoded in that read's turn. */
export function eventStreamParser(): EventStreamParser {
  let ready: EventSourceMessage[] = [];
  let malformed: ParseError | undefined;
  const parser = createParser({
    onEvent: (event) => ready.push(event),
    // Unknown field names are ignored by the SSE spec; anything else (an oversized line) is a broken stream.
    onError: (error) => {
      if (error.type !== "unknown-field") malformed ??= error;
    },
  });
  return {
    feed(text) {
      parser.feed(text);
      if (malformed !== undefined) throw new ProviderError(`malformed event stream: ${malformed.message}`, "error");
      const events = ready;
      ready = [];
      return events;
    },
  };
}
