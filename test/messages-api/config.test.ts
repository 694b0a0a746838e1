// The `anthropicEndpoint` block and `workers.claude-code.model`: the token from the file or the environment, model
// aliases naming configured models, and messages that name the field without echoing the token.
import { expect } from "chai";
import { ConfigError, parseConfig } from "../../engine/config.js";

const models = [{ id: "gpt", provider: "openai-chat", baseUrl: "https://api.example.com/v1", apiKey: "k", model: "m" }];
const parse = (rest: object, env: NodeJS.ProcessEnv = {}) =>
  parseConfig(JSON.stringify({ models, ...rest }), "gateway.yaml", env);

describe("config: anthropicEndpoint", () => {
  it("reads the token from tokenEnv and keeps the aliases", () => {
    const config = parse(
      { anthropicEndpoint: { tokenEnv: "BYOK_TOKEN", models: { haiku: "gpt" } } },
      { BYOK_TOKEN: "t1" },
    );
    expect(config.anthropicEndpoint).to.deep.equal({ token: "t1", models: { haiku: "gpt" } });
  });

  it("requires exactly one of token and tokenEnv, and aliases naming configured models", () => {
    expect(() => parse({ anthropicEndpoint: {} })).to.throw(ConfigError, /exactly one of token or tokenEnv/);
    expect(() => parse({ anthropicEndpoint: { token: "secret-1", models: { haiku: "nope" } } }))
      .to.throw(ConfigError, /anthropicEndpoint\.models\.haiku: no configured model has id "nope"/)
      .and.satisfy((e: Error) => !e.message.includes("secret-1"));
    expect(() => parse({ anthropicEndpoint: { tokenEnv: "MISSING" } })).to.throw(ConfigError, /MISSING is not set/);
  });

  it("accepts workers.claude-code.model only with the endpoint and a configured model", () => {
    const ok = parse({ anthropicEndpoint: { token: "t" }, workers: { "claude-code": { model: "gpt" } } });
    expect(ok.workers?.["claude-code"]?.model).to.equal("gpt");
    expect(() => parse({ workers: { "claude-code": { model: "gpt" } } })).to.throw(
      ConfigError,
      /needs anthropicEndpoint/,
    );
    expect(() => parse({ anthropicEndpoint: { token: "t" }, workers: { "claude-code": { model: "x" } } })).to.throw(
      ConfigError,
      /workers\.claude-code\.model/,
    );
  });
});
