// Wires the Anthropic Messages front door (messages-api/) from the config: the configured models as its targets,
// the signing key for reasoning round trips kept in the data dir (created once, readable by the owner only).
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type Koa from "koa";
import type { Logger } from "../log/logger.js";
import { MESSAGES_API_PATHS, messagesApiRoutes } from "../messages-api/handler.js";
import { createSignatureCodec } from "../messages-api/signature.js";
import type { ProviderAdapter, ProviderEndpoint, Usage } from "../providers/types.js";
import { ConfigError, type GatewayConfig, messagesEndpointToken } from "./config.js";

const KEY_FILE = "messages-signing.key";
const KEY_BYTES = 32;
/** Claude Code's requests carry the whole conversation; long sessions reach several MB. */
const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface MessagesEndpoint {
  middleware: Koa.Middleware;
  /** Its routes, which check the token themselves (x-api-key or Bearer). */
  paths: ReadonlySet<string>;
}

export async function messagesEndpoint(
  config: GatewayConfig,
  dataDir: string,
  adapterFor: (endpoint: ProviderEndpoint) => ProviderAdapter,
  onUsage: (model: string, usage: Usage) => void,
  log: Logger,
): Promise<MessagesEndpoint | undefined> {
  const endpoint = config.anthropicEndpoint;
  if (!endpoint) return undefined;
  const token = messagesEndpointToken(config);
  if (token === undefined) throw new ConfigError("anthropicEndpoint: needs security.token or anthropicEndpoint.token");
  const middleware = messagesApiRoutes({
    models: config.models.map((m) => ({
      id: m.id,
      endpoint: {
        kind: m.provider,
        baseUrl: m.baseUrl,
        apiKey: m.apiKey,
        ...(m.azureApiVersion === undefined ? {} : { azureApiVersion: m.azureApiVersion }),
      },
      model: m.model,
      ...(m.maxOutputTokens === undefined ? {} : { maxOutputTokens: m.maxOutputTokens }),
    })),
    aliases: new Map(Object.entries(endpoint.models)),
    token,
    codec: createSignatureCodec(await signingKey(dataDir)),
    maxBodyBytes: endpoint.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    adapterFor,
    onUsage,
    log,
  });
  return { middleware, paths: MESSAGES_API_PATHS };
}

async function signingKey(dataDir: string): Promise<Uint8Array> {
  const path = join(dataDir, KEY_FILE);
  try {
    const key = await readFile(path);
    if (key.length === KEY_BYTES) return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const key = randomBytes(KEY_BYTES);
  await writeFile(path, key, { mode: 0o600 });
  return key;
}
