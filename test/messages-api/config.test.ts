// The `anthropicEndpoint` block and `workers.claude-code.model`: the endpoint's token is the gateway's
// (security.token) unless anthropicEndpoint overrides it from the file or the environment; model aliases name
// configured models; messages name the field without echoing a token.
import { expect } from "chai";
import { ConfigError, messagesEndpointToken, parseConfig } from "../../engine/config.js";

const models = [{ id: "gpt", provider: "openai-chat", baseUrl: "https://api.example.com/v1", apiKey: "k", model: "m" }];
const parse = (rest: object, env: NodeJS.ProcessEnv = {}) =>
  parseConfig(JSON.stringify({ models, ...rest }), "gateway.yaml", env);
const GATEWAY_TOKEN = "gateway-token-0123456789";
const OVERRIDE = "endpoint-token-9876543210";

describe("config: anthropicEndpoint", () => {
  it("uses the gateway's token unless the endpoint overrides it", () => {
    const shared = parse({ security: { token: GATEWAY_TOKEN }, anthropicEndpoint: {} });
    expect(messagesEndpointToken(shared)).to.equal(GATEWAY_TOKEN);
    const own = parse({ security: { token: GATEWAY_TOKEN }, anthropicEndpoint: { token: OVERRIDE } });
    expect(messagesEndpointToken(own)).to.equal(OVERRIDE);
    const fromEnv = parse(
      { anthropicEndpoint: { tokenEnv: "BYOK_TOKEN", models: { haiku: "gpt" } } },
      { BYOK_TOKEN: OVERRIDE },
    );
    expect(fromEnv.anthropicEndpoint).to.deep.equal({ token: OVERRIDE, models: { haiku: "gpt" } });
    expect(messagesEndpointToken(fromEnv)).to.equal(OVERRIDE);
  });

  it("needs no token of its own: the gateway's token (configured or generated at start-up) serves", () => {
    expect(messagesEndpointToken(parse({ anthropicEndpoint: {} }))).to.equal(undefined);
  });

  it("refuses a short or doubled override and aliases naming no configured model", () => {
    expect(() => parse({ anthropicEndpoint: { token: "short" } })).to.throw(ConfigError, /at least 16 characters/);
    expect(() => parse({ anthropicEndpoint: { token: OVERRIDE, tokenEnv: "X" } })).to.throw(
      ConfigError,
      /token and tokenEnv exclude each other/,
    );
    expect(() => parse({ anthropicEndpoint: { token: OVERRIDE, models: { haiku: "nope" } } }))
      .to.throw(ConfigError, /anthropicEndpoint\.models\.haiku: no configured model has id "nope"/)
      .and.satisfy((e: Error) => !e.message.includes(OVERRIDE));
    expect(() => parse({ anthropicEndpoint: { tokenEnv: "MISSING" } })).to.throw(
      ConfigError,
      /MISSING must hold at least 16 characters/,
    );
  });

  it("accepts workers.claude-code.model only with the endpoint and a configured model", () => {
    const endpoint = { security: { token: GATEWAY_TOKEN }, anthropicEndpoint: {} };
    const ok = parse({ ...endpoint, workers: { "claude-code": { model: "gpt" } } });
    expect(ok.workers?.["claude-code"]?.model).to.equal("gpt");
    expect(() => parse({ workers: { "claude-code": { model: "gpt" } } })).to.throw(
      ConfigError,
      /needs anthropicEndpoint/,
    );
    expect(() => parse({ ...endpoint, workers: { "claude-code": { model: "x" } } })).to.throw(
      ConfigError,
      /workers\.claude-code\.model/,
    );
  });
});
