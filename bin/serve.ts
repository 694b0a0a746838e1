// `byok serve`: start the gateway from the command line's values, announce it, and stop it cleanly on a signal.
import { setFlagsFromString } from "node:v8";
import type { GatewayConfig, TlsConfig } from "../engine/config.js";
import type { LogFormat, LogLevel } from "../log/levels.js";
import { createLogger } from "../log/logger.js";
import { startupBanner } from "./banner.js";

export interface ServeOptions {
  host: string;
  port: number;
  aepPort: number | undefined;
  upstream: string;
  dataDir: string;
  config: GatewayConfig;
  configFile: string | undefined;
  tls: TlsConfig | undefined;
  logLevel: LogLevel;
  logFormat: LogFormat;
}

/**
 * The heap may grow to 3× what the last full collection kept before the next one (docs/performance.md fix 32).
 * Relayed bodies' buffers count towards V8's collection limits, and at the smallest factor, where V8 settles once
 * it has shrunk the heap after a burst of work (1.1), a gateway with tens of MB of live heap ran a Mark-Compact every
 * few MB relayed. V8 reads the factor at each full collection, so setting it here, before the gateway starts,
 * covers `npm start` and `byok serve`.
 */
const HEAP_GROWING = "--heap-growing-percent=200";

/** Signals closer together than this are one request to stop. */
const REPEATED_SIGNAL_MS = 1000;

export async function serve(o: ServeOptions): Promise<void> {
  setFlagsFromString(HEAP_GROWING);
  const log = createLogger({ level: o.logLevel, format: o.logFormat, colorize: Boolean(process.stderr.isTTY) });
  const { startGateway } = await import("../engine/gateway.js");
  const gateway = await startGateway({
    host: o.host,
    port: o.port,
    dataDir: o.dataDir,
    config: o.config,
    ...(o.configFile === undefined ? {} : { configFile: o.configFile }),
    upstream: o.upstream,
    log,
    ...(o.aepPort === undefined ? {} : { aepPort: o.aepPort }),
    ...(o.tls ? { tls: o.tls } : {}),
  });
  // The AEP line comes first: whoever waits for the listening line may read the AEP one already.
  if (gateway.aepUrl) process.stdout.write(`byok-gateway AEP v1 listening on ${gateway.aepUrl}\n`);
  process.stdout.write(`byok-gateway listening on ${gateway.url}\n`);
  // Where the generated gateway token is kept (never the token itself), the way Jupyter points at its own.
  if (gateway.tokenFile)
    process.stdout.write(
      `byok-gateway token in ${gateway.tokenFile} (clients send it as "Authorization: Bearer <token>")\n`,
    );
  process.stdout.write(
    startupBanner({ ...o, url: gateway.url, ...(gateway.aepUrl ? { aepUrl: gateway.aepUrl } : {}) }),
  );

  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    // A second signal while closing means the user wants out now, unless it is the first one delivered twice: a
    // terminal's Ctrl-C reaches the whole process group, and `npm start` forwards its own copy as well.
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince > REPEATED_SIGNAL_MS) process.exit(1);
      return;
    }
    stoppingSince = Date.now();
    log.info("shutting down", { signal });
    gateway.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error("shutdown failed", { error: err });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
