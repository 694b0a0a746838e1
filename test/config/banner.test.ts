// The start-up banner (README.md "Quick start"): every front door, the Cursor command, models by provider kind
// and never a key, the config file and the data dir.
import { expect } from "chai";
import { startupBanner } from "../../bin/banner.js";
import type { GatewayConfig } from "../../engine/config.js";

describe("start-up banner", () => {
  it("lists the listeners, the status page, the models with their provider kinds, the config and the data dir", () => {
    const config: GatewayConfig = {
      models: [
        { id: "gpt-4.1", provider: "openai-chat", baseUrl: "https://x/v1", apiKey: "sk-banner-secret-1", model: "m" },
        { id: "claude", provider: "anthropic", baseUrl: "https://y", apiKey: "sk-banner-secret-2", model: "c" },
      ],
      anthropicEndpoint: { models: {}, token: "banner-token-secret" },
    };
    const banner = startupBanner({
      url: "http://127.0.0.1:8787",
      aepUrl: "ws://127.0.0.1:8788/ws",
      config,
      configFile: "/etc/byok.yaml",
      dataDir: "/var/lib/byok",
    });
    expect(banner.split("\n")).to.deep.equal([
      "  Cursor:             cursor --test-backend-url=http://127.0.0.1:8787",
      "  Anthropic endpoint: http://127.0.0.1:8787/v1/messages",
      "  AEP v1:             ws://127.0.0.1:8788/ws",
      "  status page:        http://127.0.0.1:8787/__byok/",
      "  models:             gpt-4.1 → openai-chat, claude → anthropic",
      "  config:             /etc/byok.yaml",
      "  data dir:           /var/lib/byok",
      "",
    ]);
    expect(banner).not.to.match(/secret/);
  });
});
