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
import type { GatewayConfig } from "./config.js";
import type { Logger } from "../log/logger.js";
import { registerSecrets } from "../log/logger.js";

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
  registerSecrets(configuredSecrets(o.config));
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
  const http = createDualServer(
    createApp({ service, upstream: o.upstream, log: o.log, version: VERSION, diagnostics }).callback(),
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
    aep = await startAep(o, store);
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

/** Every secret the configuration holds: redacted from logs and from errors on both front doors. */
function configuredSecrets(config: GatewayConfig): string[] {
  const workers = Object.values(config.workers?.["claude-code"]?.env ?? {});
  return [...config.models.map((m) => m.apiKey), ...(config.aep?.token ? [config.aep.token] : []), ...workers];
}

async function startAep(
  o: GatewayOptions,
  store: Awaited<ReturnType<typeof openStore>>,
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
    factory: workerFactoryFor(DEFAULT_WORKER, o.config.workers),
    workdirFor: workdirResolver({ ...(aep?.workdir ? { base: aep.workdir } : {}), dataDir: o.dataDir }),
    log: o.log,
  });
}
