// The ONE gateway token (README.md "Security"): `security.token` when configured, else a token generated at first
// start and kept in the data dir (mode 0600), the way Jupyter keeps its own. Everything that checks a token reads it
// from here: the AEP endpoint (where `aep.token`, when set, stands in for it: the older, AEP-only setting), the
// Anthropic Messages endpoint and the status page. The Connect gate alone requires it only when it was configured
// (Cursor on loopback cannot send a header), which `explicit` tells.
import { randomBytes } from "node:crypto";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { GatewayConfig } from "./config.js";

/** The file under the data dir that holds a generated token. */
export const TOKEN_FILE = "gateway-token";
/** A stored token shorter than this is not one we wrote: a new one replaces it. */
const MIN_TOKEN_CHARS = 32;

export interface GatewayTokens {
  /** The gateway token: `security.token`, else the data dir's. */
  gateway: string;
  /** True when `security.token` (or tokenEnv) configured it; false when it came from the data dir. */
  explicit: boolean;
  /** The file a generated token is kept in (absent when configured explicitly). */
  file?: string;
  /** What AEP clients present: `aep.token` when configured (back-compat), else the gateway token. */
  aep: string;
}

/** Resolves every token the gateway checks; creates the data-dir token at first start. The data dir must exist. */
export function resolveTokens(config: GatewayConfig, dataDir: string): GatewayTokens {
  const configured = config.security?.token;
  if (configured !== undefined) return { gateway: configured, explicit: true, aep: config.aep?.token ?? configured };
  const file = join(dataDir, TOKEN_FILE);
  const gateway = storedToken(file) ?? createToken(file);
  return { gateway, explicit: false, file, aep: config.aep?.token ?? gateway };
}

/** The config as every reader of `security.token` sees it: filled from the data dir when not configured. */
export function withGatewayToken(config: GatewayConfig, tokens: GatewayTokens): GatewayConfig {
  return { ...config, security: { ...config.security, token: tokens.gateway } };
}

function storedToken(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  if (text.length < MIN_TOKEN_CHARS) return undefined;
  chmodSync(file, 0o600); // whoever loosened it: only the gateway's user may read the token
  return text;
}

function createToken(file: string): string {
  const token = randomBytes(32).toString("base64url");
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // the umask may have narrowed the mode, never widened it; set it exactly
  return token;
}
