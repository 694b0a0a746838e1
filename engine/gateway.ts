// Assembles the gateway: store, prompt assets, the agent service and the HTTP listener (ARCHITECTURE "External
// contract"). close() is the SIGTERM path: stop accepting, end live runs as canceled, close the store.
import { mkdir } from "node:fs/promises";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { startAepListener, type AepListener } from "../aep/listener.js";
import { workdirResolver } from "../aep/workdir.js";
import { loadPromptAssets } from "../prompt/assets.js";
import { createProviderAdapter } from "../providers/index.js";
import { openStore } from "../store/index.js";
import { createApp } from "../transport/app.js";
import { createDiagnostics, DIAGNOSTICS_ENV } from "../transport/diagnostics.js";
import { createDualServer } from "../transport/listener.js";
import { workerFactoryFor } from "../workers/registry.js";
import { DEFAULT_WORKER } from "../workers/types.js";
import { AgentService } from "./agent-service.js";
import { scheduleBlobGc } from "./blob-gc.js";
import { HistoryCache } from "./history-cache.js";
import { messagesEndpoint } from "./messages-endpoint.js";
import type { GatewayConfig, WorkersConfig } from "./config.js";
import type { Logger } from "../log/logger.js";

export interface GatewayOptions {
  host: string;
  port: number;
  dataDir: string;
  config: GatewayConfig;
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
  const assets = loadPromptAssets(); // a broken asset stops start-up with a clear message
  await mkdir(o.dataDir, { recursive: true });
  // Bench-only (docs/performance.md); never enabled unless asked for in the environment.
  const diagnostics = process.env[DIAGNOSTICS_ENV] === "1" ? createDiagnostics() : undefined;
  const store = await openStore({
    dataDir: o.dataDir,
    ...(diagnostics ? { onQuery: diagnostics.countStatement } : {}),
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
  });
  const gc = scheduleBlobGc(store, o.log, { onDeleted: () => history.clear(), idle: () => !service.hasLiveRuns() });
  const frontDoors = await messagesEndpoint(o.config, o.dataDir, createProviderAdapter, o.log);
  const http = createDualServer(
    createApp({
      service,
      upstream: o.upstream,
      log: o.log,
      version: VERSION,
      ...(diagnostics ? { diagnostics } : {}),
      ...(frontDoors ? { frontDoors } : {}),
    }).callback(),
  );
  const { server } = http;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(":") ? `[${o.host}]` : o.host;
  o.log.info("gateway started", { host: o.host, port, data_dir: o.dataDir, models: o.config.models.map((m) => m.id) });
  let aep: AepListener | undefined;
  try {
    aep = await startAep(o, store, `http://${loopbackFor(host)}:${port}`);
  } catch (err) {
    const stopped = http.close();
    http.closeAllConnections();
    await stopped;
    await gc.stop();
    await store.close();
    throw err;
  }
  return {
    url: `http://${host}:${port}`,
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

async function startAep(
  o: GatewayOptions,
  store: Awaited<ReturnType<typeof openStore>>,
  gatewayUrl: string,
): Promise<AepListener | undefined> {
  const aep = o.config.aep;
  const port = o.aepPort ?? aep?.port;
  if (port === undefined) return undefined;
  await store.aep.settleAfterRestart();
  return startAepListener({
    port,
    host: aep?.host ?? "127.0.0.1",
    ...(aep?.token ? { token: aep.token } : {}),
    store: store.aep,
    factory: workerFactoryFor(DEFAULT_WORKER, workerOptions(o.config, gatewayUrl)),
    workdirFor: workdirResolver({ ...(aep?.workdir ? { base: aep.workdir } : {}), dataDir: o.dataDir }),
    log: o.log,
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
