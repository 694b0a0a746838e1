// The start-up banner on stdout, after the listening lines: where each front door is, how to point Cursor at it,
// the models served here (never their keys) and where the data lives.
import type { GatewayConfig } from "../engine/config.js";

export interface BannerFacts {
  url: string;
  aepUrl?: string;
  config: GatewayConfig;
  configFile: string | undefined;
  dataDir: string;
}

export function startupBanner(f: BannerFacts): string {
  const models = f.config.models.map((m) => `${m.id} → ${m.provider}`).join(", ");
  const rows: Array<[string, string]> = [
    ["Cursor", `cursor --test-backend-url=${f.url}`],
    ["Anthropic endpoint", f.config.anthropicEndpoint ? `${f.url}/v1/messages` : "off (no anthropicEndpoint)"],
    ["AEP v1", f.aepUrl ?? "off (no --aep-port or aep.port)"],
    ["status page", `${f.url}/__byok/`],
    ["models", models === "" ? "none configured: every run goes to the upstream" : models],
    ["config", f.configFile ?? "none"],
    ["data dir", f.dataDir],
  ];
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return rows.map(([label, value]) => `  ${`${label}:`.padEnd(width)}${value}\n`).join("");
}
