// The config parses, and each configured model has its key (its value is never printed).
import { ConfigError, type GatewayConfig, loadConfig } from "../engine/config.js";
import { type Check, fail, pass } from "./check.js";

export function checkConfig(file: string | undefined): { check: Check; config?: GatewayConfig } {
  if (file === undefined)
    return {
      check: pass("config: none given and no default file: no models configured, every run goes to the upstream"),
      config: { models: [] },
    };
  try {
    const config = loadConfig(file, process.env, { requireKeys: false });
    const count = config.models.length;
    return { check: pass(`config: ${file} parses (${count} model${count === 1 ? "" : "s"})`), config };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const fix = "correct what the message names; config.example.yaml shows every section (byok init writes it)";
    return { check: fail(`config: ${err.message.replaceAll("\n", "\n    ")}`, fix) };
  }
}

export function checkKeys(config: GatewayConfig): Check[] {
  return config.models.map((m) => {
    const name = `model ${m.id}`;
    if (m.apiKey !== "") return pass(`${name}: key present (${m.apiKeyEnv ?? "apiKey in the config"})`);
    return fail(
      `${name}: key missing: environment variable ${m.apiKeyEnv} is not set`,
      `export ${m.apiKeyEnv}=<your key> where the gateway starts, or remove the model from the config`,
    );
  });
}
