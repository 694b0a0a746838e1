// What the bench process and its fakes child say to each other (over the fork IPC channel), and the directive a
// run's user text carries to tell the stateless fake provider what to stream.

/** Written into the user text as `<<bench {...}>>`. */
export interface StreamDirective {
  /** Groups the provider's records; the bench collects them by tag. */
  tag: string;
  /** Text deltas of the answer that ends the turn. */
  deltas: number;
  /** Pause between deltas (0: as fast as the socket takes them). */
  intervalMs?: number;
  /** Model passes that answer with one Read tool call before the text answer. */
  toolRounds?: number;
  /** Set for multi-turn runs: each request is checked against the previous one of the same conversation. */
  conversation?: string;
  /** Record when each text delta was written (ProviderRecord.writes). */
  stampWrites?: boolean;
}

export function directiveText(d: StreamDirective): string {
  return `<<bench ${JSON.stringify(d)}>>`;
}

/** Every text delta carries exactly this text, so a client can count deltas from the characters it received. */
export const DELTA_TEXT = "word ";
/** The body of the upstream's small answer (the relay scenario). */
export const SMALL_BODY = JSON.stringify({
  ok: true,
  items: Array.from({ length: 8 }, (_, i) => ({ id: i, name: `item-${i}` })),
});

export interface ProviderRecord {
  requestBytes: number;
  /** nowMs() (the machine's monotonic clock, shared by all processes) when the first content delta was written. */
  firstByteAt: number;
  messages: number;
  /** The messages start with the previous request's messages, byte for byte as JSON. */
  prefixOk: boolean;
  /** JSON bytes of the messages past that prefix. */
  newMessageBytes: number;
  /** nowMs() when each text delta was written, when the directive asked for it. */
  writes?: number[];
}

export interface FakesReady {
  providerUrl: string;
  upstreamUrl: string;
}

/** Takes (and forgets) the provider records of one tag. */
export interface FakesRequest {
  id: number;
  tag: string;
}

export interface FakesReply {
  id: number;
  records: ProviderRecord[];
}
