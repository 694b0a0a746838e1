// `byok doctor`: every check in order, each printed as it is found, then how to start Cursor against this
// gateway. True only when no check failed.
import type { GatewayConfig, TlsConfig } from "../engine/config.js";
import { type Check, formatCheck, skip } from "./check.js";
import { checkConfig, checkKeys } from "./config-checks.js";
import { checkEndpoint } from "./endpoint-checks.js";
import { checkDataDir, checkPort } from "./local-checks.js";
import { checkUpstream } from "./network-checks.js";
import { checkTls } from "./tls-checks.js";
import { checkWorkerCommand, checkWorkerCredentials, checkWorkerSandbox } from "./worker-checks.js";

export interface DoctorOptions {
  host: string;
  port: number;
  aepPort: number | undefined;
  upstream: string;
  dataDir: string;
  configFile: string | undefined;
  /** From --tls-cert/--tls-key; config `tls:` otherwise. */
  tls: TlsConfig | undefined;
  offline: boolean;
}

export async function runDoctor(o: DoctorOptions, out: { write(text: string): unknown } = process.stdout) {
  const checks: Check[] = [];
  const report = (...found: Check[]) => {
    for (const check of found) out.write(formatCheck(check));
    checks.push(...found);
  };
  const { check, config } = checkConfig(o.configFile);
  report(check);
  if (config) {
    report(...checkKeys(config));
    report(...(await Promise.all(config.models.map((m) => checkEndpoint(m, o.offline)))));
  }
  report(await checkDataDir(o.dataDir));
  report(await checkPort("Connect port", "--port", o.host, o.port));
  const tls = o.tls ?? config?.tls;
  if (tls) report(checkTls(tls));
  const aepPort = o.aepPort ?? config?.aep?.port;
  // The AEP listener binds aep.host, loopback by default, whatever --host says.
  const aepHost = config?.aep?.host ?? "127.0.0.1";
  if (aepPort !== undefined) report(await checkPort("AEP port", "--aep-port", aepHost, aepPort));
  report(await checkUpstream(o.upstream, o.offline));
  report(...(await workerChecks(config, aepPort)));
  out.write(`\nStart Cursor with: ${cursorCommand(o, config, tls !== undefined)}\n`);
  const failed = checks.filter((c) => c.outcome === "fail").length;
  out.write(failed === 0 ? "All checks passed.\n" : `${failed} of ${checks.length} checks failed.\n`);
  return failed === 0;
}

async function workerChecks(config: GatewayConfig | undefined, aepPort: number | undefined): Promise<Check[]> {
  if (aepPort === undefined) return [skip("AEP worker: not checked, AEP is off (no --aep-port or aep.port)")];
  const worker = config?.workers?.["claude-code"];
  return [await checkWorkerCommand(worker), checkWorkerSandbox(worker), checkWorkerCredentials(worker)];
}

/** Cursor sends all its backend traffic to the URL it is started with. */
function cursorCommand(o: DoctorOptions, config: GatewayConfig | undefined, tls: boolean): string {
  const host = o.host === "0.0.0.0" || o.host === "::" ? "127.0.0.1" : o.host.includes(":") ? `[${o.host}]` : o.host;
  const port = o.port === 0 ? "<the port printed at start-up>" : String(o.port);
  const proxy = config?.security?.token
    ? " (through a proxy that adds the x-byok-token header: README.md, Security)"
    : "";
  return `cursor --test-backend-url=${tls ? "https" : "http"}://${host}:${port}${proxy}`;
}
