// The security: and limits: blocks (docs/protocol/cursor-transport.md §2.5, §6.9, §9): validated at load, the token
// taken from the environment when asked, and never quoted in a message.
import { expect } from "chai";
import { ConfigError, parseConfig } from "../../engine/config.js";

const TOKEN = "token-that-is-long-enough-0123";

function refusal(text: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    parseConfig(text, "gateway.yaml", env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as Error).message;
  }
  return expect.fail("expected a ConfigError");
}

describe("config: security and limits", () => {
  it("takes the token from security.tokenEnv", () => {
    const config = parseConfig('{"security": {"tokenEnv": "BYOK_TOKEN"}}', "gateway.yaml", { BYOK_TOKEN: TOKEN });
    expect(config.security).to.deep.equal({ token: TOKEN });
  });

  it("refuses a short token, a short or unset tokenEnv, and both at once, without quoting the token", () => {
    expect(refusal('{"security": {"token": "short"}}')).to.equal(
      "gateway.yaml: security.token: must be at least 16 characters",
    );
    expect(refusal('{"security": {"tokenEnv": "BYOK_TOKEN"}}')).to.contain("BYOK_TOKEN must hold at least 16");
    const both = refusal(`{"security": {"token": "${TOKEN}", "tokenEnv": "BYOK_TOKEN"}}`, { BYOK_TOKEN: TOKEN });
    expect(both).to.contain("token and tokenEnv exclude each other");
    expect(both).not.to.contain(TOKEN);
  });

  it("accepts host and origin lists and positive limits; refuses unknown keys and non-positive limits", () => {
    const config = parseConfig(
      JSON.stringify({
        security: { allowedHosts: ["gw.lan:8787"], allowedOrigins: ["https://ok.example"] },
        limits: { maxRequestBytes: 1024, bodyBudgetBytes: 8192, maxWaitingStreams: 5 },
        timers: { runRequestWaitMs: 1000 },
      }),
      "gateway.yaml",
      {},
    );
    expect(config.limits).to.deep.equal({ maxRequestBytes: 1024, bodyBudgetBytes: 8192, maxWaitingStreams: 5 });
    expect(config.security?.allowedHosts).to.deep.equal(["gw.lan:8787"]);
    expect(refusal('{"limits": {"bodyBudgetBytes": 0}}')).to.contain("limits.bodyBudgetBytes");
    expect(refusal('{"security": {"allowHosts": []}}')).to.contain("security");
  });
});
