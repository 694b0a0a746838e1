// The configuration as the status API shows it (docs/status-api.md §6): every secret replaced by one constant, so
// not even a prefix or a length leaves. A value is secret when its field is named like a credential, when it sits in
// an `env` map (worker environments hold keys), or when it contains a secret the logger knows about.
import { redact } from "../log/logger.js";

export const MASK = "••••••••";

/** Field names that hold a credential (apiKey, token, …); the *Env fields only name a variable and stay readable. */
const SECRET_FIELD = /(key|token|secret|password|authorization|cookie)$/i;

export function maskSecrets(value: unknown, inSecretMap = false): unknown {
  if (typeof value === "string") return inSecretMap || redact(value) !== value ? MASK : value;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, inSecretMap));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([field, v]) => [
      field,
      typeof v === "string" && SECRET_FIELD.test(field) ? MASK : maskSecrets(v, inSecretMap || field === "env"),
    ]),
  );
}
