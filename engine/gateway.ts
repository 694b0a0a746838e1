// Assembles the gateway: store, prompt assets, the agent service and the HTTP listener (README.md "Command
// line"). Start-up fails with a ConfigError naming the flag, field or file when what it was given cannot be used,
// and "gateway started" is logged only once every listener is bound. close() is the SIGTERM path: stop accepting,
// end live runs as canceled, close the store.
import { readFileSync } from "node:fs";
import type { AddressInfo, Server } from "node:net";
import type { AepListener } from "../aep/listener.js";
import { loadPromptAssets } from "../prompt/assets.js";
import { createProviderAdapter } from "../providers/index.js";
import { DataDirError, openStore, type Store } from "../store/index.js";
import { type AgentSide, createApp } from "../transport/app.js";
import { DECODE_WEIGHT } from "../transport/body.js";
import { createDiagnostics, DIAGNOSTICS_ENV } from "../transport/diagnostics.js";
import { isLoopbackHost } from "../transport/gate.js";
import { createDualServer, type TlsMaterial } from "../transport/listener.js";
import { createRelay } from "../transport/relay.js";
import type { AgentService } from "./agent-service.js";
import { scheduleBlobGc } from "./blob-gc.js";
import { HistoryCache } from "./history-cache.js";
import {
  ConfigError,
  type GatewayConfig,
  messagesEndpointToken,
  type TlsConfig,
  type WorkersConfig,
} from "./config.js";
import { resolveTokens, withGatewayToken } from "./gateway-token.js";
import { LiveRunRegistry } from "./live-runs.js";
import { statusSource } from "./status-source.js";
import { meteredAdapters, UsageLedger, usageSink } from "./usage-meter.js";
import { statusRoutes } from "../status/routes.js";
import type { Logger } from "../log/logger.js";
import { registerSecrets } from "../log/logger.js";
import { createToolServices } from "./tool-services.js";

export interface GatewayOptions {
  host: string;
  port: number;
  dataDir: string;
  config: GatewayConfig;
  /** The file `config` was read from, named in start-up errors about it. */
  configFile?: string;
  upstream: string;
  log: Logger;
  /** Overrides config aep.port (`--aep-port`); either one turns the AEP listener on. */
  aepPort?: number;
  /** PEM files (`--tls-cert/--tls-key` or config `tls:`): the Connect port then speaks HTTPS. */
  tls?: TlsConfig;
}

export interface Gateway {
  url: string;
  /** The AEP v1 WebSocket endpoint, when it is on. */
  aepUrl?: string;
  /** Where the generated gateway token is kept (none when security.token is configured). */
  tokenFile?: string;
  close(): Promise<void>;
}

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
  .version;

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const aepPort = o.aepPort ?? o.config.aep?.port;
  checkAepAccess(o, aepPort);
  refuseUnguardedExposure(o);
  const bodies = bodyLimits(o.config); // checked before anything starts
  const tls = o.tls ? readTls(o.tls) : undefined;
  registerSecrets(configuredSecrets(o.config));
  const assets = loadPromptAssets(); // a broken asset stops start-up with a clear message
  // Bench-only (docs/performance.md); never enabled unless asked for in the environment.
  const diagnostics =
    process.env[DIAGNOSTICS_ENV] === "1"
      ? createDiagnostics({
          streams: () => service?.streamCounts() ?? { streams: 0, waiting: 0 },
        })
      : undefined;
  const store = await openStore({
    dataDir: o.dataDir,
    ...(diagnostics ? { onQuery: diagnostics.countStatement } : {}),
  }).catch((err: unknown) => {
    throw err instanceof DataDirError ? new ConfigError(err.message) : err;
  });
  // After the store: the data dir exists and is writable, so a generated token can be kept there.
  const tokens = resolveTokens(o.config, o.dataDir);
  registerSecrets([tokens.gateway, tokens.aep]);
  const config = withGatewayToken(o.config, tokens);
  const history = new HistoryCache();
  const runs = new LiveRunRegistry(o.config.models);
  const idle = () => !service?.hasLiveRuns();
  const usage = new UsageLedger(store, o.log, idle);
  // The agent side (its protobuf schemas, machines and Connect handlers: most of the bundle) loads on the first
  // agent request or AGENT_PRELOAD_MS after start, whichever comes first; health and the relay do not wait for it.
  let service: AgentService | undefined;
  let agentLoad: Promise<AgentSide> | undefined;
  const agent = () => {
    agentLoad ??= Promise.all([import("./agent-service.js"), import("../machines/request-stream.js")]).then(
      ([{ AgentService }, { RUN_REQUEST_WAIT_MS }]) => {
        service = new AgentService({
          store: usage.ridingOnCheckpoints(store),
          assets,
          models: o.config.models,
          log: o.log,
          history,
          adapterFor: meteredAdapters(createProviderAdapter, usageSink(usage, "cursor")),
          timers: o.config.timers ?? {},
          limits: o.config.limits ?? {},
          runs,
          toolServices: createToolServices(o.config),
        });
        return { service, runRequestWaitMs: o.config.timers?.runRequestWaitMs ?? RUN_REQUEST_WAIT_MS };
      },
    );
    return agentLoad;
  };
  const gc = scheduleBlobGc(store, o.log, { onDeleted: () => history.clear(), idle });
  // Cursor on loopback cannot send the token header: the Connect gate asks for it only when it was configured.
  const { token: _resolved, ...security } = config.security ?? {};
  // Loaded only when configured, like the AEP listener below: a gateway without them does not parse them. The
  // Messages door meters its own calls: pass-through ones never reach an adapter.
  const messages = config.anthropicEndpoint
    ? await (await import("./messages-endpoint.js")).messagesEndpoint(
        config,
        o.dataDir,
        createProviderAdapter,
        usageSink(usage, "messages"),
        o.log,
      )
    : undefined;
  const access = {
    ...security,
    ...(tokens.explicit ? { token: tokens.gateway } : {}),
    host: o.host,
    port: () => (server.address() as AddressInfo).port,
    ...(messages ? { selfAuthenticatedPaths: messages.paths } : {}),
  };
  const relay = createRelay({ upstream: o.upstream, log: o.log });
  let aep: AepListener | undefined;
  const statusPage = statusRoutes({
    source: statusSource({
      runs,
      store,
      usage,
      aepSessions: () => aep?.sessions(),
      config,
      settings: {
        host: o.host,
        dataDir: o.dataDir,
        upstream: o.upstream,
        ...(o.configFile ? { configFile: o.configFile } : {}),
      },
      version: VERSION,
    }),
    tokenRequired: tokens.explicit,
  });
  const http = createDualServer(
    createApp({
      agent,
      relay,
      log: o.log,
      version: VERSION,
      access,
      bodies,
      ...(diagnostics ? { diagnostics } : {}),
      ...(messages ? { frontDoors: messages } : {}),
      statusPage,
    }),
    tls,
  );
  const { server } = http;
  const urlHost = o.host.includes(":") ? `[${o.host}]` : o.host;
  const scheme = tls ? "https" : "http";
  try {
    await listen(server, o.port, o.host).catch((err: unknown) => {
      throw listenError(err, `the Connect port (--port) ${o.host}:${o.port}`);
    });
    const gatewayUrl = `${scheme}://${loopbackFor(urlHost)}:${(server.address() as AddressInfo).port}`;
    aep = aepPort === undefined ? undefined : await startAep({ ...o, config }, aepPort, store, gatewayUrl, tokens.aep);
  } catch (err) {
    relay.close();
    const stopped = http.close();
    http.closeAllConnections();
    await stopped;
    await gc.stop();
    await usage.close();
    await store.close();
    throw err;
  }
  const preload = setTimeout(
    () => agent().catch((err: unknown) => o.log.error("agent side failed to load", { error: err })),
    AGENT_PRELOAD_MS,
  ).unref();
  const { port } = server.address() as AddressInfo;
  o.log.info("gateway started", { host: o.host, port, data_dir: o.dataDir, models: o.config.models.map((m) => m.id) });
  if (tokens.file) o.log.info("gateway token kept in the data dir", { file: tokens.file });
  return {
    url: `${scheme}://${urlHost}:${port}`,
    ...(tokens.file ? { tokenFile: tokens.file } : {}),
    ...(aep ? { aepUrl: aep.url } : {}),
    async close() {
      await aep?.close();
      const stopped = http.close();
      clearTimeout(preload);
      // A load still under way finishes first, so its service is closed too (a failed one left none).
      await agentLoad?.catch(() => undefined);
      await service?.close();
      relay.close();
      http.closeAllConnections();
      await stopped;
      await gc.stop();
      await usage.close();
      await store.close();
      o.log.info("gateway stopped");
    },
  };
}

/** Long enough for the health check and Cursor's first relayed calls of a fresh start to go first. */
const AGENT_PRELOAD_MS = 1000;

/** Every secret the configuration holds: redacted from logs and from errors on both front doors. */
function configuredSecrets(config: GatewayConfig): string[] {
  const envs: Array<Record<string, string> | undefined> = Object.values(config.workers ?? {}).map((w) => w?.env);
  const workers = envs.flatMap((env) => Object.values(env ?? {}));
  const tokens = [config.aep?.token, config.anthropicEndpoint?.token].filter((t) => t !== undefined);
  const services = [config.webSearch?.apiKey, config.imageGeneration?.apiKey].filter(
    (k) => k !== undefined && k !== "",
  );
  return [...config.models.map((m) => m.apiKey), ...tokens, ...workers, ...(services as string[])];
}

/** The certificate and key, read once at start-up; a file that cannot be read names itself. */
function readTls(files: TlsConfig): TlsMaterial {
  const read = (what: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new ConfigError(`TLS ${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`);
    }
  };
  return { cert: read("certificate", files.cert), key: read("key", files.key) };
}

/** Anyone who reaches a non-loopback address could run the agent with the user's keys: a token is required. */
function refuseUnguardedExposure(o: GatewayOptions): void {
  if (isLoopbackHost(o.host) || o.config.security?.token) return;
  throw new ConfigError(
    `--host ${o.host} is not a loopback address: anyone who can reach it could run the agent with your API keys. ` +
      "Set security.token (or security.tokenEnv) in the config, or keep --host 127.0.0.1 and use an SSH tunnel",
  );
}

/** Per request 64 MiB (as before the budget); all bodies in flight together 512 MiB of memory. */
const DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024;
const DEFAULT_BODY_BUDGET_BYTES = 512 * 1024 * 1024;

function bodyLimits(config: GatewayConfig): { maxRequestBytes: number; budgetBytes: number } {
  const maxRequestBytes = config.limits?.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const budgetBytes = config.limits?.bodyBudgetBytes ?? DEFAULT_BODY_BUDGET_BYTES;
  if (maxRequestBytes * DECODE_WEIGHT > budgetBytes) {
    throw new ConfigError(
      `limits.bodyBudgetBytes (${budgetBytes}) must hold one request of limits.maxRequestBytes (${maxRequestBytes}) ` +
        `while it is decoded: at least ${DECODE_WEIGHT} × ${maxRequestBytes}`,
    );
  }
  return { maxRequestBytes, budgetBytes };
}

/** The AEP endpoint may leave loopback only behind a token; said before anything else starts. */
function checkAepAccess(o: GatewayOptions, aepPort: number | undefined): void {
  const aep = o.config.aep;
  if (aepPort === undefined || aep?.host === undefined || isLoopbackHost(aep.host) || aep.token) return;
  throw new ConfigError(
    `${o.configFile ?? "config"}: aep.token is required when aep.host is not a loopback address (${aep.host})`,
  );
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** Why an address cannot be listened on, for the errors a user can act on. */
const LISTEN_FAILURES = new Map<string, string>([
  ["EADDRINUSE", "is already in use"],
  ["EACCES", "needs privileges this process does not have"],
  ["EADDRNOTAVAIL", "is not an address of this machine"],
]);

/** A listener that cannot bind is a start-up error naming which listener and address; anything else stays as is. */
function listenError(err: unknown, listener: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  const reason = code === undefined ? undefined : LISTEN_FAILURES.get(code);
  return reason ? new ConfigError(`${listener} ${reason} (${code})`) : err;
}

async function startAep(
  o: GatewayOptions,
  port: number,
  store: Store,
  gatewayUrl: string,
  token: string,
): Promise<AepListener> {
  const aep = o.config.aep;
  const host = aep?.host ?? "127.0.0.1";
  const [{ startAepListener }, { DEFAULT_EVENT_LOG }, { workerFactories }] = await Promise.all([
    import("../aep/listener.js"),
    import("../aep/event-log.js"),
    import("../workers/registry.js"),
  ]);
  await store.aep.settleAfterRestart();
  return startAepListener({
    port,
    host,
    token,
    allowedOrigins: o.config.security?.allowedOrigins ?? [],
    store: store.aep,
    factory: workerFactories(workerOptions(o.config, gatewayUrl)),
    workdirs: { ...(aep?.workdir ? { base: aep.workdir } : {}), dataDir: o.dataDir },
    log: o.log,
    ...(aep?.turnTimeoutMs ? { turnTimeoutMs: aep.turnTimeoutMs } : {}),
    ...(aep?.heartbeatMs ? { heartbeatMs: aep.heartbeatMs } : {}),
    eventLog: { ...DEFAULT_EVENT_LOG, ...aep?.eventLog },
  }).catch((err: unknown) => {
    throw listenError(err, `the AEP port (--aep-port or aep.port) ${host}:${port}`);
  });
}

/**
 * `workers.claude-code.model` runs the CLI on a configured model through this gateway's own /v1/messages, its
 * small fast model included; the gateway token is its key.
 */
function workerOptions(config: GatewayConfig, gatewayUrl: string): WorkersConfig | undefined {
  const claude = config.workers?.["claude-code"];
  const token = messagesEndpointToken(config);
  if (claude?.model === undefined || !config.anthropicEndpoint || token === undefined) return config.workers;
  const { model, ...rest } = claude;
  const env = {
    ...rest.env,
    ANTHROPIC_BASE_URL: gatewayUrl,
    ANTHROPIC_API_KEY: token,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
  };
  return { ...config.workers, "claude-code": { ...rest, env } };
}

/** A wildcard bind address is reached on loopback. */
function loopbackFor(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  return host === "[::]" ? "[::1]" : host;
}
