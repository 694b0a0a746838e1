// Which side serves a run (README.md "Configuration"; docs/protocol/cursor-transport.md §8.1): the gateway runs it
// itself when the requested model is configured here or the request carries the user's own credentials; a
// run_request naming neither continues where its conversation's last run went; every other run — Cursor's own
// models — goes to the upstream unchanged, BidiAppends, RunSSE and Run alike.
import type { AgentClientMessage, RequestedModel } from "../proto/gen/agent/v1/agent_pb.js";
import type { Logger } from "../log/logger.js";
import type { Store } from "../store/index.js";
import type { HeldAppend, RunRoute } from "../transport/agent-backend.js";
import type { ModelConfig } from "./config.js";

/** A run_request that names neither a model nor credentials continues on its conversation's last route. */
export function namesNoModel(requested: RequestedModel | undefined): boolean {
  return !requested?.modelId && !requested?.credentials.case;
}

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
  /** Appends that waited locally for the run_request, until the handler that relayed it takes them. */
  private readonly early = new Map<string, HeldAppend[]>();

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
      this.early.delete(oldest);
    }
  }

  /** Keeps what waited for the request's run_request, forgotten with the request. */
  holdEarly(requestId: string, appends: HeldAppend[]): void {
    if (appends.length > 0 && this.seen.has(requestId)) this.early.set(requestId, appends);
  }

  takeEarly(requestId: string): HeldAppend[] {
    const appends = this.early.get(requestId) ?? [];
    this.early.delete(requestId);
    return appends;
  }

  /** True when the request went upstream; each use keeps it for another TTL. */
  has(requestId: string, now = Date.now()): boolean {
    const at = this.seen.get(requestId);
    if (at === undefined) return false;
    if (now - at > this.ttlMs) {
      this.seen.delete(requestId);
      this.early.delete(requestId);
      return false;
    }
    this.add(requestId, now);
    return true;
  }
}

/** Where a conversation's last run went, and the model id it named. */
export interface LastRoute {
  route: RunRoute;
  modelId: string;
}

/** A routed request: where it goes, the model id it names, and why (for the routing log line). */
export type RoutedRun = LastRoute & { reason: string };

/**
 * Routes the first run_request (or prewarm_request) of a request, and remembers each conversation's last route:
 * the most recent 10 000 in memory, all of them in the store.
 */
export class RunRouter {
  private readonly recent = new Map<string, LastRoute>();

  constructor(
    private readonly models: readonly ModelConfig[],
    private readonly store: Pick<Store, "getConversationRoute" | "setConversationRoute">,
    private readonly log: Logger,
    private readonly max = 10_000,
  ) {}

  /** undefined for messages that decide nothing; a promise when only the store knows the conversation's route. */
  routeOf(message: AgentClientMessage): RoutedRun | Promise<RoutedRun> | undefined {
    const m = message.message;
    if (m.case !== "runRequest" && m.case !== "prewarmRequest") return undefined;
    const requested = m.value.requestedModel;
    const conversationId = m.value.conversationId ?? "";
    if (!namesNoModel(requested) || !conversationId)
      return { ...routeRun(this.models, requested), modelId: requested?.modelId ?? "" };
    // No model named: the conversation's last route; after a restart the store remembers it.
    const reason = "no model named: the conversation's last route";
    const known = this.recent.get(conversationId);
    if (known) return { ...known, reason };
    return this.store
      .getConversationRoute(conversationId)
      .then((stored) => ({ ...(stored ?? { route: "upstream" as const, modelId: "" }), reason }));
  }

  remember(conversationId: string, routed: LastRoute): void {
    const route: LastRoute = { route: routed.route, modelId: routed.modelId };
    this.recent.delete(conversationId);
    this.recent.set(conversationId, route);
    for (const [oldest] of this.recent) {
      if (this.recent.size <= this.max) break;
      this.recent.delete(oldest);
    }
    // A local run writes its route in its own first commit (store.beginRun); an upstream one has no commit of ours.
    if (route.route !== "upstream") return;
    this.store
      .setConversationRoute(conversationId, route)
      .catch((e: unknown) =>
        this.log.error("conversation route not stored", { conversation_id: conversationId, error: String(e) }),
      );
  }
}
