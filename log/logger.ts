// Structured logging: one JSON object per line on stderr (stdout belongs to the CLI's own output). The redaction
// guard is the last line of defence for docs/protocol/README.md §6.8 — credentials never reach a log line:
// credential-named fields are dropped and every configured secret is replaced in the finished line (redact below).

export interface Logger {
  info(msg: string, fields?: object): void;
  warn(msg: string, fields?: object): void;
  error(msg: string, fields?: object): void;
}

type Level = "info" | "warn" | "error";

// Matches authorization, proxy-authorization, api_key, apiKey, api-key, x-api-key, cookie, set-cookie.
const credentialKey = /authorization|api[-_]?key|^(set-)?cookie$/i;

export function createJsonLogger(
  out: { write(line: string): unknown } = process.stderr,
  now: () => Date = () => new Date(),
): Logger {
  const emit = (level: Level, msg: string, fields?: object) => {
    const record = { time: now().toISOString(), level, msg, ...withoutCredentials(fields) };
    out.write(`${redact(JSON.stringify(record, jsonSafe))}\n`);
  };
  return {
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
  };
}

/** A copy of `fields` without credential-named keys, at any depth. */
function withoutCredentials(fields: object | undefined): Record<string, unknown> {
  return (fields === undefined ? {} : redactValue(fields, new Set())) as Record<string, unknown>;
}

function redactValue(value: unknown, ancestors: Set<object>): unknown {
  // Only plain objects and arrays are walked; Date, Buffer, URL and Error keep their own JSON rendering.
  if (typeof value !== "object" || value === null || !(Array.isArray(value) || isPlainObject(value))) return value;
  if (ancestors.has(value)) return "[circular]";
  ancestors.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((v) => redactValue(v, ancestors));
  } else {
    const kept: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (!credentialKey.test(key)) kept[key] = redactValue(v, ancestors);
    }
    out = kept;
  }
  ancestors.delete(value);
  return out;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// JSON.stringify renders Error as {} and throws on bigint; both occur in our fields (causes, int64 protobuf ids).
function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) {
    const code = (value as NodeJS.ErrnoException).code;
    return code === undefined
      ? { name: value.name, message: value.message }
      : { name: value.name, message: value.message, code };
  }
  return value;
}

// The one redaction of secrets from outbound text: log lines, Connect errors and AEP envelopes all pass through
// `redact`. It knows the configured secrets, registered once at start-up, and takes a request's own as arguments.

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
