// A minimal Anthropic Messages client for the endpoint tests: POSTs a body and reads the SSE answer into events.
import { EventSourceParserStream } from "eventsource-parser/stream";

export const TOKEN = "byok-messages-token-5c1e";

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": TOKEN, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

export async function sseEvents(text: string): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const stream = new Blob([text])
    .stream()
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const message of stream) events.push({ event: message.event ?? "", data: JSON.parse(message.data) });
  return events;
}
