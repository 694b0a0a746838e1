// Which side serves a run (README.md "Configuration"): the gateway runs it itself when the requested model
// is configured here or the request carries the user's own credentials; every other run — Cursor's own models —
// goes to the upstream unchanged, BidiAppends and RunSSE alike.
import type { RequestedModel } from "../proto/gen/agent/v1/agent_pb.js";
import type { RunRoute } from "../transport/agent-backend.js";
import type { ModelConfig } from "./config.js";

/** Where a run goes and why, in the words of the routing log line. */
export interface RouteDecision {
  route: RunRoute;
  reason: string;
}

export function routeRun(models: readonly ModelConfig[], requested: RequestedModel | undefined): RouteDecision {
  const modelId = requested?.modelId ?? "";
  if (models.some((m) => m.id === modelId)) return { route: "local", reason: "configured model" };
  const credentials = requested?.credentials;
  // Azure and Bedrock credentials are the user's own too: run setup answers them (or says why it cannot).
  const ownKey =
    credentials?.case === "apiKeyCredentials" ? credentials.value.apiKey !== "" : Boolean(credentials?.case);
  if (ownKey) return { route: "local", reason: "user key" };
  return { route: "upstream", reason: `upstream (model ${JSON.stringify(modelId)} is not configured)` };
}

/**
 * request_ids handed to the upstream, remembered so their later appends and a reconnecting RunSSE follow them.
 * Bounded: the oldest are forgotten first, and an entry expires ten minutes after its last use.
 */
export class UpstreamRequests {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly max = 10_000,
    private readonly ttlMs = 10 * 60_000,
  ) {}

  add(requestId: string, now = Date.now()): void {
    this.seen.delete(requestId);
    this.seen.set(requestId, now);
    for (const [oldest] of this.seen) {
      if (this.seen.size <= this.max) break;
      this.seen.delete(oldest);
    }
  }

  /** True when the request went upstream; each use keeps it for another TTL. */
  has(requestId: string, now = Date.now()): boolean {
    const at = this.seen.get(requestId);
    if (at === undefined) return false;
    if (now - at > this.ttlMs) {
      this.seen.delete(requestId);
      return false;
    }
    this.add(requestId, now);
    return true;
  }
}
