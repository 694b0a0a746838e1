// Shared by the status API and browser tests: a gateway with one configured model on the fake OpenAI server, and an
// SSE reader for /__byok/api/events.
import { request } from "node:http";
import { createParser } from "eventsource-parser";

export const MODEL_ID = "byok-status-model";
export const PROVIDER_MODEL = "gpt-status";
export const API_KEY = "sk-status-key-7f3a9c21e4b8d6";

export interface SseEvent {
  event: string;
  data: any;
}

export interface SseReader {
  events: SseEvent[];
  close(): void;
}

/** Follows an SSE endpoint, parsing every event's JSON data into `events`. */
export function readSse(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    const req = request(url, { headers: { accept: "text/event-stream", ...headers }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE ${url}: HTTP ${res.statusCode}`));
      const parser = createParser({
        onEvent: (e) => events.push({ event: e.event ?? "message", data: JSON.parse(e.data) }),
      });
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => parser.feed(chunk));
      res.on("error", () => undefined);
      resolve({ events, close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

/** A promise and the function that settles it. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
