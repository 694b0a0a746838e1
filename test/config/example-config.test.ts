// config.example.yaml never drifts from the loader (it is loaded by the real one), covers every provider kind and
// section, and `byok init` writes it to the default config path once, refusing to overwrite.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../engine/config.js";
import { PROVIDER_KINDS } from "../../providers/types.js";

const root = new URL("../../", import.meta.url).pathname;
const example = join(root, "config.example.yaml");
/** Every variable the example names, so the loader resolves all of it. */
const env = {
  OPENAI_API_KEY: "sk-example-openai",
  ANTHROPIC_API_KEY: "sk-example-anthropic",
  DEEPSEEK_API_KEY: "sk-example-deepseek",
  BYOK_GATEWAY_TOKEN: "example-gateway-token",
};

function init(configHome: string, ...args: string[]) {
  return spawnSync(process.execPath, ["--import", "tsx", "bin/byok.ts", "init", ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 15_000,
    env: { ...process.env, XDG_CONFIG_HOME: configHome },
  });
}

describe("config.example.yaml", () => {
  it("loads through the real config loader, with every provider kind, AEP, workers and the Anthropic endpoint", () => {
    const config = loadConfig(example, env);
    expect(new Set(config.models.map((m) => m.provider))).to.deep.equal(new Set(PROVIDER_KINDS));
    // An OpenAI-compatible endpoint besides OpenAI's own, and a local model server.
    expect(config.models.map((m) => new URL(m.baseUrl).host)).to.include.members([
      "api.deepseek.com",
      "127.0.0.1:11434",
    ]);
    expect(config).to.include.keys(
      "anthropicEndpoint",
      "security",
      "limits",
      "timers",
      "aep",
      "workers",
      "webSearch",
      "imageGeneration",
    );
    expect(config.workers?.["claude-code"]?.model).to.be.a("string");
  });

  it("byok init writes it to the default config path, says where, and never overwrites", () => {
    const home = mkdtempSync(join(tmpdir(), "byok-init-"));
    try {
      const target = join(home, "byok-gateway", "config.yaml");
      const first = init(home);
      expect(first.status, first.stderr).to.equal(0);
      expect(first.stdout.split("\n")[0]).to.equal(`byok: wrote the example config to ${target}`);
      expect(readFileSync(target, "utf8")).to.equal(readFileSync(example, "utf8"));
      expect(statSync(target).mode & 0o777).to.equal(0o600);

      writeFileSync(target, "models: []\n");
      const again = init(home);
      expect(again.status).to.equal(2);
      expect(again.stderr).to.equal(
        `byok: ${target} already exists; init does not overwrite it (edit it, or move it away first)\n`,
      );
      expect(readFileSync(target, "utf8")).to.equal("models: []\n");

      const elsewhere = join(home, "other.yaml");
      expect(init(home, "--config", elsewhere).stdout).to.contain(`wrote the example config to ${elsewhere}`);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
