// Assembles the gateway: store, prompt assets, the agent service and the HTTP listener (README.md "Command
// line"). Start-up fails with a ConfigError naming the flag, field or file when what it was given cannot be used,
// and "gateway started" is logged only once every listener is bound. close() is the SIGTERM path: stop accepting,
// end live runs as canceled, close the store.
import { readFileSync } from "node:fs";
import type { AddressInfo, Server } from "node:net";
import { startAepListener, type AepListener } from "../aep/listener.js";
import { workdirResolver } from "../aep/workdir.js";
import { loadPromptAssets } from "../prompt/assets.js";
import { createProviderAdapter } from "../providers/index.js";
import { DataDirError, openStore, type Store } from "../store/index.js";
import { createApp } from "../transport/app.js";
import { DECODE_WEIGHT } from "../transport/body.js";
import { createDiagnostics, DIAGNOSTICS_ENV } from "../transport/diagnostics.js";
import { isLoopbackHost } from "../transport/gate.js";
import { createDualServer } from "../transport/listener.js";
import { workerFactories } from "../workers/registry.js";
import { AgentService } from "./agent-service.js";
import { scheduleBlobGc } from "./blob-gc.js";
import { HistoryCache } from "./history-cache.js";
import { ConfigError, type GatewayConfig, type WorkersConfig } from "./config.js";
import { messagesEndpoint } from "./messages-endpoint.js";
import type { Logger } from "../log/logger.js";
import { registerSecrets } from "../log/logger.js";

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
}

export interface Gateway {
  url: string;
  /** The AEP v1 WebSocket endpoint, when it is on. */
  aepUrl?: string;
  close(): Promise<void>;
}

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
  .version;

export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const aepPort = o.aepPort ?? o.config.aep?.port;
  checkAepAccess(o, aepPort);
  refuseUnguardedExposure(o);
  const bodies = bodyLimits(o.config); // checked before anything starts
  registerSecrets(configuredSecrets(o.config));
  const assets = loadPromptAssets(); // a broken asset stops start-up with a clear message
  // Bench-only (docs/performance.md); never enabled unless asked for in the environment.
  const diagnostics =
    process.env[DIAGNOSTICS_ENV] === "1" ? createDiagnostics(() => service.streamCounts()) : undefined;
  const store = await openStore({
    dataDir: o.dataDir,
    ...(diagnostics ? { onQuery: diagnostics.countStatement } : {}),
  }).catch((err: unknown) => {
    throw err instanceof DataDirError ? new ConfigError(err.message) : err;
  });
  const history = new HistoryCache();
  const service = new AgentService({
    store,
    assets,
    models: o.config.models,
    log: o.log,
    history,
    adapterFor: createProviderAdapter,
    timers: o.config.timers ?? {},
    limits: o.config.limits ?? {},
  });
  const gc = scheduleBlobGc(store, o.log, { onDeleted: () => history.clear(), idle: () => !service.hasLiveRuns() });
  const security = o.config.security ?? {};
  const access = { ...security, host: o.host, port: () => (server.address() as AddressInfo).port };
  const frontDoors = await messagesEndpoint(o.config, o.dataDir, createProviderAdapter, o.log);
  const http = createDualServer(
    createApp({
      service,
      upstream: o.upstream,
      log: o.log,
      version: VERSION,
      access,
      bodies,
      ...(diagnostics ? { diagnostics } : {}),
      ...(frontDoors ? { frontDoors } : {}),
    }).callback(),
  );
  const { server } = http;
  const urlHost = o.host.includes(":") ? `[${o.host}]` : o.host;
  let aep: AepListener | undefined;
  try {
    await listen(server, o.port, o.host).catch((err: unknown) => {
      throw listenError(err, `the Connect port (--port) ${o.host}:${o.port}`);
    });
    const gatewayUrl = `http://${loopbackFor(urlHost)}:${(server.address() as AddressInfo).port}`;
    aep = aepPort === undefined ? undefined : await startAep(o, aepPort, store, gatewayUrl);
  } catch (err) {
    const stopped = http.close();
    http.closeAllConnections();
    await stopped;
    await gc.stop();
    await store.close();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  o.log.info("gateway started", { host: o.host, port, data_dir: o.dataDir, models: o.config.models.map((m) => m.id) });
  return {
    url: `http://${urlHost}:${port}`,
    ...(aep ? { aepUrl: aep.url } : {}),
    async close() {
      await aep?.close();
      const stopped = http.close();
      await service.close();
      http.closeAllConnections();
      await stopped;
      await gc.stop();
      await store.close();
      o.log.info("gateway stopped");
    },
  };
}

/** Every secret the configuration holds: redacted from logs and from errors on both front doors. */
function configuredSecrets(config: GatewayConfig): string[] {
  const envs: Array<Record<string, string> | undefined> = Object.values(config.workers ?? {}).map((w) => w?.env);
  const workers = envs.flatMap((env) => Object.values(env ?? {}));
  return [...config.models.map((m) => m.apiKey), ...(config.aep?.token ? [config.aep.token] : []), ...workers];
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

async function startAep(o: GatewayOptions, port: number, store: Store, gatewayUrl: string): Promise<AepListener> {
  const aep = o.config.aep;
  const host = aep?.host ?? "127.0.0.1";
  await store.aep.settleAfterRestart();
  return startAepListener({
    port,
    host,
    ...(aep?.token ? { token: aep.token } : {}),
    store: store.aep,
    factory: workerFactories(workerOptions(o.config, gatewayUrl)),
    workdirFor: workdirResolver({ ...(aep?.workdir ? { base: aep.workdir } : {}), dataDir: o.dataDir }),
    log: o.log,
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
  if (claude?.model === undefined || !config.anthropicEndpoint) return config.workers;
  const { model, ...rest } = claude;
  const env = {
    ...rest.env,
    ANTHROPIC_BASE_URL: gatewayUrl,
    ANTHROPIC_API_KEY: config.anthropicEndpoint.token,
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
