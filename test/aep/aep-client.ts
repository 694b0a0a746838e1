// A scripted AEP v1 client over a real WebSocket (`ws`). Every envelope it receives goes through the session's
// OrderingChecker; tests wait on promise gates (`next`) rather than sleeps.
import { randomUUID } from "node:crypto";
import { WebSocket } from "ws";
import type { ServerEnvelope } from "../../aep/wire/envelope.js";
import { OrderingChecker } from "./invariants.js";

type Match = (e: ServerEnvelope) => boolean;

export class AepClient {
  readonly received: ServerEnvelope[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<{ from: number; match: Match; resolve: (e: ServerEnvelope) => void }> = [];

  private constructor(
    readonly ws: WebSocket,
    readonly checker: OrderingChecker,
  ) {
    ws.on("message", (data) => {
      const envelope = JSON.parse(data.toString()) as ServerEnvelope;
      this.checker.check(envelope);
      this.received.push(envelope);
      const index = this.received.length - 1;
      this.waiters = this.waiters.filter((w) =>
        index >= w.from && w.match(envelope) ? (w.resolve(envelope), false) : true,
      );
    });
    this.closed = new Promise((resolve) =>
      ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  static async connect(
    url: string,
    o: { checker?: OrderingChecker; headers?: Record<string, string> } = {},
  ): Promise<AepClient> {
    const ws = new WebSocket(url, { headers: o.headers });
    const checker = o.checker ?? new OrderingChecker();
    checker.reconnected();
    const client = new AepClient(ws, checker);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    return client;
  }

  /** Sends one client envelope; returns its id. */
  send(type: string, data: unknown, id: string = `cli_${randomUUID()}`): string {
    this.ws.send(
      JSON.stringify({
        version: "aep/v1",
        id,
        seq: 0,
        session_id: this.sessionId,
        timestamp: Date.now(),
        event: { type, data },
      }),
    );
    return id;
  }

  get sessionId(): string {
    return this.received.find((e) => e.session_id !== "")?.session_id ?? "";
  }

  mark(): number {
    return this.received.length;
  }

  /** The first envelope from `from` on that matches; waits for it when it has not come yet. */
  next(match: Match | string, from = 0, timeoutMs = 60_000): Promise<ServerEnvelope> {
    const m: Match = typeof match === "string" ? (e) => e.event.type === match : match;
    const found = this.received.slice(from).find(m);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no ${typeof match === "string" ? match : "matching envelope"} within ${timeoutMs} ms; got ${this.kinds(from).join(" ")}`,
            ),
          ),
        timeoutMs,
      );
      this.waiters.push({ from, match: m, resolve: (e) => (clearTimeout(timer), resolve(e)) });
    });
  }

  kinds(from = 0, to = this.received.length): string[] {
    return this.received
      .slice(from, to)
      .map((e) => (e.event.type === "state" ? `state(${(e.event.data as { state: string }).state})` : e.event.type));
  }

  /** The data of every envelope of one kind (loosely typed: tests read fields by name). */
  of(type: string, from = 0): Array<Record<string, any>> {
    return this.received
      .slice(from)
      .filter((e) => e.event.type === type)
      .map((e) => e.event.data as Record<string, any>);
  }

  /** Stops reading the socket (a slow consumer) / reads again. */
  pause(): void {
    (this.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  }

  resume(): void {
    (this.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close();
    await this.closed;
  }

  /** Drops the TCP connection without a close handshake (a client that vanished). */
  async drop(): Promise<void> {
    this.ws.terminate();
    await this.closed;
  }
}

/** Connects and inits; retries only on SESSION_ALREADY_CONNECTED, as docs/protocol/aep.md asks a reconnecting client to
 * do. */
export async function openSession(
  url: string,
  data: Record<string, unknown>,
  checker = new OrderingChecker(),
): Promise<{ client: AepClient; state: ServerEnvelope }> {
  for (let attempt = 0; ; attempt++) {
    const client = await AepClient.connect(url, { checker });
    client.send("init", data);
    const answer = await client.next((e) => e.event.type === "state" || e.event.type === "error");
    if (answer.event.type === "state") return { client, state: answer };
    const code = (answer.event.data as { code: string }).code;
    await client.closed;
    if (code !== "SESSION_ALREADY_CONNECTED" || attempt > 50)
      throw new Error(`init refused: ${JSON.stringify(answer.event.data)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
