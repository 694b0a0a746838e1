// The one redaction of secrets from outbound text: every log line, every Connect error, every AEP envelope passes
// through `redact`. It knows the configured secrets (model apiKeys, worker env values, the AEP token), registered
// once at start-up, and takes the secrets of one request (a key Cursor sent) as arguments.

export const REDACTED = "[redacted]";

/** Shorter values are not keys (worker env holds flags such as "1" too) and would redact ordinary text. */
export const MIN_SECRET_LENGTH = 8;

/** Longest first, so a secret that contains another is replaced whole. */
let configured: readonly string[] = [];

/** Adds configured secrets; called at start-up, before any request is served. */
export function registerSecrets(values: Iterable<string>): void {
  const all = new Set([...configured, ...[...values].filter(isSecret)]);
  configured = [...all].sort((a, b) => b.length - a.length);
}

/** Forgets the configured secrets (a gateway in the same process stopped; tests). */
export function clearSecrets(): void {
  configured = [];
}

/** `text` with every configured secret and every one of `extra` replaced by [redacted]. */
export function redact(text: string, ...extra: string[]): string {
  let out = text;
  for (const secret of extra) if (secret !== "") out = out.split(secret).join(REDACTED);
  for (const secret of configured) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

function isSecret(value: string): boolean {
  return value.length >= MIN_SECRET_LENGTH;
}
