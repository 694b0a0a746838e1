// Who may open an AEP session (docs/protocol/aep.md §1): a token is always required (the gateway token, or
// aep.token), presented as `Authorization: Bearer` on the upgrade or as init data.token; a browser Origin only when
// the config lists it; an address that keeps presenting wrong tokens is refused for a while. Pure checks, no sockets.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Wrong tokens one address may present within a window before every attempt of it is refused. */
export const MAX_FAILED_ATTEMPTS = 10;
export const FAILED_ATTEMPT_WINDOW_MS = 60_000;
/** Addresses tracked at once; the oldest goes first (a flood of addresses cannot grow the map). */
const MAX_TRACKED_ADDRESSES = 1024;

export function bearerOf(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "");
  return match?.[1]?.trim();
}

/** Constant-time whatever the lengths: both sides are digested first. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** What a session records as its owner: the token's digest, never the token (a session_key is bound to it). */
export function ownerOf(token: string): string {
  return digest(token).toString("hex").slice(0, 32);
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** An Origin header is a browser's: accepted only when listed (security.allowedOrigins), exactly. */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  return origin === undefined || allowed.some((o) => o.toLowerCase() === origin.toLowerCase());
}

/** Failed token attempts per remote address, in fixed windows. */
export class FailedAttempts {
  private readonly byAddress = new Map<string, { since: number; count: number }>();

  constructor(
    private readonly max = MAX_FAILED_ATTEMPTS,
    private readonly windowMs = FAILED_ATTEMPT_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether this address is refused now, whatever it presents. */
  blocked(address: string): boolean {
    const entry = this.current(address);
    return entry !== undefined && entry.count >= this.max;
  }

  record(address: string): void {
    const entry = this.current(address) ?? { since: this.now(), count: 0 };
    entry.count += 1;
    this.byAddress.delete(address); // re-inserted last: the map's order is the eviction order
    this.byAddress.set(address, entry);
    if (this.byAddress.size > MAX_TRACKED_ADDRESSES) this.byAddress.delete(this.byAddress.keys().next().value!);
  }

  private current(address: string): { since: number; count: number } | undefined {
    const entry = this.byAddress.get(address);
    if (entry && this.now() - entry.since >= this.windowMs) {
      this.byAddress.delete(address);
      return undefined;
    }
    return entry;
  }
}
