// Anthropic-kind models: the client's request goes to the configured Anthropic endpoint untouched but for the model
// name and the credentials (the configured key replaces the gateway token), and the answer streams back as it came.
import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ProviderEndpoint, Usage } from "../providers/types.js";
import { MessagesApiError } from "./errors.js";
import { usageObserver } from "./passthrough-usage.js";

const DEFAULT_VERSION = "2023-06-01";

export interface PassThroughCall {
  endpoint: ProviderEndpoint;
  /** `/v1/messages` or `/v1/messages/count_tokens`, with the client's query. */
  path: string;
  body: Record<string, unknown>;
  model: string;
  headers: { version?: string | undefined; beta?: string | undefined };
  signal: AbortSignal;
  /** Called with the usage a successful answer reports, read while it is forwarded. */
  onUsage?: (usage: Usage) => void;
}

export async function passThrough(call: PassThroughCall, res: ServerResponse): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`${call.endpoint.baseUrl}${call.path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": call.endpoint.apiKey,
        "anthropic-version": call.headers.version ?? DEFAULT_VERSION,
        ...(call.headers.beta ? { "anthropic-beta": call.headers.beta } : {}),
      },
      body: JSON.stringify({ ...call.body, model: call.model }),
      signal: call.signal,
    });
  } catch {
    throw new MessagesApiError("api_error", `provider error: cannot reach ${new URL(call.endpoint.baseUrl).host}`);
  }
  const contentType = response.headers.get("content-type") ?? "application/json";
  res.writeHead(response.status, {
    "content-type": contentType,
    ...(response.headers.has("request-id") ? { "request-id": response.headers.get("request-id")! } : {}),
  });
  if (!response.body) return void res.end();
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream);
  const observed = call.onUsage && response.ok ? [usageObserver(contentType, call.onUsage)] : [];
  // A client that goes away mid-stream ends the pipeline; the upstream request is aborted with it.
  await pipeline([body, ...observed, res]).catch(() => {
    res.destroy();
  });
}
