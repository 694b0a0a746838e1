// The gateway's YAML config (README.md "Configuration"; JSON is valid YAML). Validation happens once at
// load so a bad file fails the start with a message naming the file and the offending path. Key values never
// appear in any message (docs/protocol/README.md §6.8): we format issues ourselves and never echo YAML source snippets.
import { readFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import * as z from "zod";
import { ConfigError, formatPath, isDirectory, isHttpUrl, parseYamlQuietly } from "./config-input.js";
import { PROVIDER_KINDS, type ProviderKind } from "../providers/types.js";
import { type AcpWorkerConfig, acpWorkerSchema, codexWorkerSchema } from "../workers/acp/config.js";
import {
  type ImageGenerationConfig,
  imageGenerationSchema,
  resolveToolServices,
  type WebSearchConfig,
  webSearchSchema,
} from "./tool-services-config.js";

export interface ModelConfig {
  /** Matches the client's `requested_model.model_id`. */
  id: string;
  provider: ProviderKind;
  /** No trailing slash; OpenAI base URLs include `/v1`, Anthropic's do not. */
  baseUrl: string;
  apiKey: string;
  /** The environment variable apiKey was read from, named in diagnostics (never the value). */
  apiKeyEnv?: string;
  model: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  /** False for a model whose endpoint takes no image input: a run with an attached image is refused. Default true. */
  images?: boolean;
  /** Azure OpenAI (provider openai-chat, baseUrl = the deployment's URL): `api-key` auth with this api-version. */
  azureApiVersion?: string;
  /** Send a per-conversation `prompt_cache_key` (OpenAI kinds; default: only to api.openai.com). */
  promptCacheKey?: boolean;
}

export interface AepConfig {
  /** Unset: the endpoint is on only with --aep-port. */
  port?: number;
  host?: string;
  token?: string;
  workdir?: string;
  /** A turn running longer than this ends TURN_TIMEOUT (default 30 minutes). */
  turnTimeoutMs?: number;
  /** WebSocket ping interval; a client that answers none within it is dropped (default 30 s). */
  heartbeatMs?: number;
  /** Per session, what the durable event log keeps for re-attaching clients (default 8 MiB, 1 day). */
  eventLog?: { maxBytes?: number; maxAgeMs?: number };
}

/** Stream timers and the client's KV answer deadline (blob SET and GET), in ms (docs/protocol/cursor-transport.md §6;
 * docs/protocol/cursor-run.md §5.2); unset ones keep the defaults. */
export interface TimerConfig {
  heartbeatMs?: number;
  reconnectGraceMs?: number;
  terminalRetentionMs?: number;
  kvReplyDeadlineMs?: number;
  /** A RunSSE whose request_id gets no run_request within this is ended (docs/protocol/cursor-transport.md §6.9). */
  runRequestWaitMs?: number;
}

/** Who may talk to the Connect port (docs/protocol/cursor-transport.md §9). The token is a secret: never logged. */
export interface SecurityConfig {
  token?: string;
  /** Extra Host values accepted besides the loopback names on the listening port: `name` (any port) or `name:port`. */
  allowedHosts?: string[];
  /** Browser origins accepted besides Cursor's own window (`vscode-file://vscode-app`). */
  allowedOrigins?: string[];
}

/** Memory bounds of request bodies and waiting streams (docs/protocol/cursor-transport.md §2.5, §6.9). */
export interface LimitsConfig {
  maxRequestBytes?: number;
  bodyBudgetBytes?: number;
  maxWaitingStreams?: number;
}

/** `workers.claude-code`: how the AEP gateway launches the Claude Code CLI. env values are secrets: never logged. */
export interface ClaudeCodeWorkerConfig {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  permissionMode?: string;
  /** A configured model id: the CLI then runs on it through the gateway's own /v1/messages (anthropicEndpoint). */
  model?: string;
}

export interface WorkersConfig {
  "claude-code"?: ClaudeCodeWorkerConfig;
  codex?: AcpWorkerConfig;
  acp?: AcpWorkerConfig;
}

/** `anthropicEndpoint`: the Anthropic Messages front door (`POST /v1/messages`); on only when configured. */
export interface AnthropicEndpointConfig {
  /** Client model names (e.g. Claude Code's own) → configured model ids. */
  models: Record<string, string>;
  /** Overrides the gateway's token (security.token) as what clients send as x-api-key / Bearer; never logged. */
  token?: string;
  maxBodyBytes?: number;
}

export interface GatewayConfig {
  models: ModelConfig[];
  anthropicEndpoint?: AnthropicEndpointConfig;
  timers?: TimerConfig;
  aep?: AepConfig;
  workers?: WorkersConfig;
  security?: SecurityConfig;
  limits?: LimitsConfig;
  /** PEM files for HTTPS on the Connect port (README.md "HTTP/2 and TLS"). */
  tls?: TlsConfig;
  /** The services behind approved WebSearch and GenerateImage calls (engine/tool-services.ts). */
  webSearch?: WebSearchConfig;
  imageGeneration?: ImageGenerationConfig;
}

export interface TlsConfig {
  cert: string;
  key: string;
}

export { ConfigError } from "./config-input.js";

const nonEmpty = z.string().min(1, "must not be empty");
const positiveInt = z.number().int("expected an integer").positive("expected a positive integer");

const httpUrl = z
  .string()
  .refine(isHttpUrl, "expected an http(s) URL")
  .transform((url) => url.replace(/\/$/, ""));

const modelSchema = z
  .strictObject({
    id: nonEmpty,
    provider: z.enum(PROVIDER_KINDS),
    baseUrl: httpUrl,
    apiKey: nonEmpty.optional(),
    apiKeyEnv: nonEmpty.optional(),
    model: nonEmpty,
    contextWindow: positiveInt.optional(),
    maxOutputTokens: positiveInt.optional(),
    images: z.boolean().optional(),
    azureApiVersion: nonEmpty.optional(),
    promptCacheKey: z.boolean().optional(),
  })
  .superRefine((m, ctx) => {
    if ((m.apiKey === undefined) === (m.apiKeyEnv === undefined)) {
      ctx.addIssue({ code: "custom", message: "exactly one of apiKey or apiKeyEnv is required" });
    }
    if (m.azureApiVersion !== undefined && m.provider !== "openai-chat") {
      ctx.addIssue({ code: "custom", path: ["azureApiVersion"], message: "applies only to provider openai-chat" });
    }
    if (m.promptCacheKey !== undefined && m.provider === "anthropic") {
      ctx.addIssue({
        code: "custom",
        path: ["promptCacheKey"],
        message: "applies only to the OpenAI kinds (Anthropic caching uses breakpoints, always on)",
      });
    }
  });

const configSchema = z.strictObject({
  models: z
    .array(modelSchema)
    .default([])
    .superRefine((models, ctx) => {
      const seen = new Set<string>();
      models.forEach((m, i) => {
        if (seen.has(m.id)) ctx.addIssue({ code: "custom", path: [i, "id"], message: `duplicate model id "${m.id}"` });
        seen.add(m.id);
      });
    }),
  anthropicEndpoint: z
    .strictObject({
      models: z.record(nonEmpty, nonEmpty).default({}),
      token: z.string().min(16, "must be at least 16 characters").optional(),
      tokenEnv: nonEmpty.optional(),
      maxBodyBytes: positiveInt.optional(),
    })
    .refine((e) => e.token === undefined || e.tokenEnv === undefined, "token and tokenEnv exclude each other")
    .optional(),
  aep: z
    .strictObject({
      // Optional: host/token/workdir may be configured with the port given as --aep-port (the flag wins anyway).
      port: z.number().int("expected an integer").min(0).max(65535).optional(),
      host: nonEmpty.optional(),
      token: nonEmpty.optional(),
      workdir: nonEmpty.refine(isAbsolute, "must be an absolute path").optional(),
      turnTimeoutMs: positiveInt.optional(),
      heartbeatMs: positiveInt.optional(),
      eventLog: z.strictObject({ maxBytes: positiveInt.optional(), maxAgeMs: positiveInt.optional() }).optional(),
    })
    .optional(),
  timers: z
    .strictObject({
      heartbeatMs: positiveInt.optional(),
      reconnectGraceMs: positiveInt.optional(),
      terminalRetentionMs: positiveInt.optional(),
      kvReplyDeadlineMs: positiveInt.optional(),
      runRequestWaitMs: positiveInt.optional(),
    })
    .optional(),
  security: z
    .strictObject({
      token: z.string().min(16, "must be at least 16 characters").optional(),
      tokenEnv: nonEmpty.optional(),
      allowedHosts: z.array(nonEmpty).optional(),
      allowedOrigins: z.array(nonEmpty).optional(),
    })
    .refine((s) => s.token === undefined || s.tokenEnv === undefined, "token and tokenEnv exclude each other")
    .optional(),
  tls: z.strictObject({ cert: nonEmpty, key: nonEmpty }).optional(),
  limits: z
    .strictObject({
      maxRequestBytes: positiveInt.optional(),
      bodyBudgetBytes: positiveInt.optional(),
      maxWaitingStreams: positiveInt.optional(),
    })
    .optional(),
  workers: z
    .strictObject({
      "claude-code": z
        .strictObject({
          command: nonEmpty.optional(),
          args: z.array(z.string()).optional(),
          env: z.record(z.string(), z.string()).optional(),
          /** Names the variable holding the Anthropic key; it is handed to the CLI as ANTHROPIC_API_KEY. */
          apiKeyEnv: nonEmpty.optional(),
          permissionMode: z
            .enum(["default", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"])
            .optional(),
          model: nonEmpty.optional(),
        })
        .optional(),
      codex: codexWorkerSchema.optional(),
      acp: acpWorkerSchema.optional(),
    })
    .optional(),
  webSearch: webSearchSchema,
  imageGeneration: imageGenerationSchema,
});

/** `requireKeys: false` (byok doctor) leaves a model whose key variable is unset with an empty apiKey instead of
 * failing, so each missing key can be reported on its own. */
export interface LoadOptions {
  requireKeys?: boolean;
}

export function loadConfig(path?: string, env: NodeJS.ProcessEnv = process.env, o: LoadOptions = {}): GatewayConfig {
  if (path === undefined) return { models: [] };
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      `${path}: cannot read config file (${(err as NodeJS.ErrnoException).code ?? "unknown error"})`,
    );
  }
  return parseConfig(text, path, env, o);
}

export function parseConfig(
  text: string,
  source: string,
  env: NodeJS.ProcessEnv = process.env,
  o: LoadOptions = {},
): GatewayConfig {
  const raw = parseYamlQuietly(text, source) ?? {};
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${source}: ${formatPath(issue.path)}: ${issue.message}`).join("\n"),
    );
  }
  const problems: string[] = [];
  const models = result.data.models.map((m, i): ModelConfig => {
    const { apiKeyEnv, apiKey, ...rest } = m;
    if (apiKey !== undefined) return { ...rest, apiKey };
    const fromEnv = env[apiKeyEnv!];
    if ((fromEnv === undefined || fromEnv === "") && o.requireKeys !== false) {
      problems.push(`${source}: models[${i}].apiKeyEnv: environment variable ${apiKeyEnv} is not set`);
    }
    return { ...rest, apiKey: fromEnv ?? "", apiKeyEnv: apiKeyEnv! };
  });
  const workdir = result.data.aep?.workdir;
  if (workdir !== undefined && !isDirectory(workdir))
    problems.push(`${source}: aep.workdir: ${workdir} is not an existing directory`);
  const workers = resolveWorkers(result.data.workers, source, env, problems);
  const security = resolveSecurity(result.data.security, source, env, problems);
  const anthropicEndpoint = resolveAnthropicEndpoint(result.data.anthropicEndpoint, models, source, env, problems);
  // Like a model's key, a missing service key is reported by byok doctor on its own (requireKeys: false).
  const services = resolveToolServices(result.data, source, env, o.requireKeys === false ? [] : problems);
  const workerModel = workers?.["claude-code"]?.model;
  if (workerModel !== undefined && (!anthropicEndpoint || !models.some((m) => m.id === workerModel)))
    problems.push(
      `${source}: workers.claude-code.model: needs anthropicEndpoint and a configured model with id "${workerModel}"`,
    );
  if (problems.length > 0) throw new ConfigError(problems.join("\n"));
  const { anthropicEndpoint: _raw, webSearch: _search, imageGeneration: _image, ...rest } = result.data;
  return {
    ...rest,
    ...services,
    models,
    ...(workers ? { workers } : {}),
    ...(security ? { security } : {}),
    ...(anthropicEndpoint ? { anthropicEndpoint } : {}),
  };
}

function resolveSecurity(
  security: z.infer<typeof configSchema>["security"],
  source: string,
  env: NodeJS.ProcessEnv,
  problems: string[],
): SecurityConfig | undefined {
  if (security?.tokenEnv === undefined) return security;
  const { tokenEnv, ...rest } = security;
  const token = env[tokenEnv] ?? "";
  if (token.length < 16)
    problems.push(`${source}: security.tokenEnv: environment variable ${tokenEnv} must hold at least 16 characters`);
  return { ...rest, token };
}

type ParsedWorkers = z.infer<typeof configSchema>["workers"];

function resolveWorkers(
  workers: ParsedWorkers,
  source: string,
  env: NodeJS.ProcessEnv,
  problems: string[],
): WorkersConfig | undefined {
  const claude = workers?.["claude-code"];
  if (!workers || !claude) return workers as WorkersConfig | undefined;
  const { apiKeyEnv, ...rest } = claude;
  if (apiKeyEnv === undefined) return { ...workers, "claude-code": rest };
  const key = env[apiKeyEnv];
  if (key === undefined || key === "")
    problems.push(`${source}: workers.claude-code.apiKeyEnv: environment variable ${apiKeyEnv} is not set`);
  return { ...workers, "claude-code": { ...rest, env: { ...rest.env, ANTHROPIC_API_KEY: key ?? "" } } };
}

function resolveAnthropicEndpoint(
  endpoint: z.infer<typeof configSchema>["anthropicEndpoint"],
  models: readonly ModelConfig[],
  source: string,
  env: NodeJS.ProcessEnv,
  problems: string[],
): AnthropicEndpointConfig | undefined {
  if (!endpoint) return undefined;
  const { tokenEnv, token, ...rest } = endpoint;
  for (const [name, id] of Object.entries(rest.models)) {
    if (!models.some((m) => m.id === id))
      problems.push(`${source}: anthropicEndpoint.models.${name}: no configured model has id "${id}"`);
  }
  if (tokenEnv === undefined) return token === undefined ? rest : { ...rest, token };
  const fromEnv = env[tokenEnv] ?? "";
  if (fromEnv.length < 16)
    problems.push(
      `${source}: anthropicEndpoint.tokenEnv: environment variable ${tokenEnv} must hold at least 16 characters`,
    );
  return { ...rest, token: fromEnv };
}

/**
 * The token clients of /v1/messages present (x-api-key or Bearer): the endpoint's own override, else the gateway's
 * token. The one place that decides it, for the endpoint and for the Claude Code worker pointed at it.
 */
export function messagesEndpointToken(
  config: Pick<GatewayConfig, "anthropicEndpoint" | "security">,
): string | undefined {
  return config.anthropicEndpoint?.token ?? config.security?.token;
}
