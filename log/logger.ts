// Structured logging on pino: one JSON object per line on stderr by default (stdout belongs to the CLI's own
// output), or pino-pretty's readable form for a terminal. Credentials never reach a log line
// (docs/protocol/README.md §6.8): credential-named fields are censored at any depth, and every configured secret
// is replaced in the finished line by the one redaction below (`redact`), whatever field it hides in. The fields
// are censored in the walk every line takes anyway (jsonSafe) rather than by pino's redact paths: wildcard paths
// three levels deep measured ~350 µs a line against ~3 µs for top-level ones, and still miss a fourth level.
import { createRequire } from "node:module";
import { pino } from "pino";
import type { PrettyOptions } from "pino-pretty";
import type { LogFormat, LogLevel } from "./levels.js";
import { stderrLines } from "./line-writer.js";

export interface Logger {
  info(msg: string, fields?: object): void;
  warn(msg: string, fields?: object): void;
  error(msg: string, fields?: object): void;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Colours in the pretty form (a terminal). */
  colorize?: boolean;
  out?: { write(line: string): unknown };
  now?: () => Date;
}

/**
 * Field names that hold credentials, as they occur in headers, configs, worker env and provider bodies:
 * authorization, proxy-authorization, api_key, apiKey, x-api-key, ANTHROPIC_API_KEY, token, x-byok-token,
 * accessToken, ANTHROPIC_AUTH_TOKEN, client_secret, cookie, set-cookie. Their values are censored at any depth.
 */
const CREDENTIAL_FIELD = /authorization|api[-_]?key|token$|secret|^(set-)?cookie$/i;

export function createLogger(o: LoggerOptions = {}): Logger {
  const out = o.out ?? stderrLines();
  const now = o.now ?? (() => new Date());
  const render = o.format === "pretty" ? prettyLines(o.colorize ?? false) : (line: string) => line;
  // No worker thread: a line is written, or held a few milliseconds in this thread (log/line-writer.ts) and written
  // at exit at the latest, so a line logged just before process.exit is never lost.
  const destination = { write: (line: string) => out.write(render(redact(line))) };
  const base = pino(
    {
      level: o.level ?? "info",
      base: undefined,
      timestamp: () => `,"time":"${now().toISOString()}"`,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => jsonSafe(fields, new Set()) as Record<string, unknown>,
      },
      // formatters.log already rendered errors; pino's own `err` serializer would re-wrap them.
      serializers: { err: (value: unknown) => value },
    },
    destination,
  );
  return {
    info: (msg, fields) => base.info(fields ?? {}, msg),
    warn: (msg, fields) => base.warn(fields ?? {}, msg),
    error: (msg, fields) => base.error(fields ?? {}, msg),
  };
}

/** The JSON-lines logger (tests hand it a capturing stream and a fixed clock). */
export function createJsonLogger(
  out: { write(line: string): unknown } = process.stderr,
  now: () => Date = () => new Date(),
): Logger {
  return createLogger({ out, now });
}

/** A logger whose every line carries `bound` (a run's ids and model); a line's own field of the same name wins. */
export function withFields(log: Logger, bound: object): Logger {
  return {
    info: (msg, fields) => log.info(msg, { ...bound, ...fields }),
    warn: (msg, fields) => log.warn(msg, { ...bound, ...fields }),
    error: (msg, fields) => log.error(msg, { ...bound, ...fields }),
  };
}

/** Loaded only for the pretty form: a gateway logging JSON does not pay for pino-pretty at start-up. */
function prettyLines(colorize: boolean): (line: string) => string {
  const { prettyFactory } = createRequire(import.meta.url)("pino-pretty") as {
    prettyFactory(options: PrettyOptions): (line: string) => string;
  };
  return prettyFactory({
    colorize,
    translateTime: "SYS:HH:MM:ss.l",
    singleLine: true,
    // An error field stays on its line, as any other field does.
    errorLikeObjectKeys: [],
  });
}

/**
 * A copy of `value` that JSON renders readably and without credentials: credential-named fields censored, Error as
 * {name, message, code} (JSON.stringify makes it {}), bigint as its digits (int64 protobuf ids), a cycle as
 * "[circular]". Only plain objects and arrays are walked; Date, Buffer and URL keep their own JSON rendering.
 */
function jsonSafe(value: unknown, ancestors: Set<object>): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) return errorFields(value);
  if (typeof value !== "object" || value === null || !(Array.isArray(value) || isPlainObject(value))) return value;
  if (ancestors.has(value)) return "[circular]";
  ancestors.add(value);
  const out = Array.isArray(value)
    ? value.map((v) => jsonSafe(v, ancestors))
    : Object.fromEntries(
        Object.entries(value).map(([key, v]) => [key, CREDENTIAL_FIELD.test(key) ? REDACTED : jsonSafe(v, ancestors)]),
      );
  ancestors.delete(value);
  return out;
}

function errorFields(error: Error): object {
  const code = (error as NodeJS.ErrnoException).code;
  return code === undefined
    ? { name: error.name, message: error.message }
    : { name: error.name, message: error.message, code };
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
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
