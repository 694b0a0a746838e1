// Reads the usage of an Anthropic answer the pass-through forwards untouched: a Transform that hands every chunk on
// as it came and, on the side, parses the SSE events (message_start, message_delta) or the JSON message.
import { Transform, type TransformCallback } from "node:stream";
import { createParser } from "eventsource-parser";
import { AnthropicUsageFold } from "../providers/anthropic-stream.js";
import type { Usage } from "../providers/types.js";

/** A non-streamed message larger than this is forwarded without reading its usage (memory stays bounded). */
export const MAX_OBSERVED_JSON_BYTES = 4 * 1024 * 1024;

export function usageObserver(contentType: string, onUsage: (usage: Usage) => void): Transform {
  const fold = new AnthropicUsageFold();
  const observe = contentType.startsWith("text/event-stream") ? sseObserver(fold) : jsonObserver(fold);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      observe.feed(chunk);
      callback(null, chunk);
    },
    flush(callback: TransformCallback) {
      observe.end();
      const usage = fold.result();
      if (usage) onUsage(usage);
      callback();
    },
  });
}

interface Observer {
  feed(chunk: Buffer): void;
  end(): void;
}

function sseObserver(fold: AnthropicUsageFold): Observer {
  const decoder = new TextDecoder();
  const parser = createParser({
    onEvent(event) {
      const data = parseJson(event.data) as { type?: unknown; message?: { usage?: unknown }; usage?: unknown };
      if (data?.type === "message_start") fold.add(data.message?.usage);
      else if (data?.type === "message_delta") fold.add(data.usage);
    },
  });
  return {
    feed: (chunk) => parser.feed(decoder.decode(chunk, { stream: true })),
    end: () => parser.feed(decoder.decode()),
  };
}

function jsonObserver(fold: AnthropicUsageFold): Observer {
  const chunks: Buffer[] = [];
  let size = 0;
  return {
    feed(chunk) {
      size += chunk.length;
      if (size <= MAX_OBSERVED_JSON_BYTES) chunks.push(chunk);
    },
    end() {
      if (size > MAX_OBSERVED_JSON_BYTES) return;
      const message = parseJson(Buffer.concat(chunks).toString("utf8")) as { usage?: unknown } | undefined;
      fold.add(message?.usage);
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
