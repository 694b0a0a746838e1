// The optional webSearch and imageGeneration sections (README.md "Web search and image generation"): defaults per
// kind, keys from the environment, and errors that name the field and never the key.
import { expect } from "chai";
import { ConfigError, parseConfig } from "../../engine/config.js";

const KEY = "tvly-DO-NOT-LEAK-0123456789";

function parse(sections: object, env: NodeJS.ProcessEnv = {}) {
  return parseConfig(JSON.stringify(sections), "gateway.yaml", env);
}

function problem(sections: object, env: NodeJS.ProcessEnv = {}): string {
  try {
    parse(sections, env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as Error).message;
  }
  expect.fail("expected a ConfigError");
}

describe("config: webSearch and imageGeneration", () => {
  it("reads both sections with their defaults and keys from the environment", () => {
    const config = parse(
      {
        webSearch: { kind: "tavily", apiKeyEnv: "TAVILY_API_KEY" },
        imageGeneration: { kind: "openai-images", apiKey: "sk-image", model: "gpt-image-1" },
      },
      { TAVILY_API_KEY: KEY },
    );
    expect(config.webSearch).to.deep.equal({
      kind: "tavily",
      baseUrl: "https://api.tavily.com",
      apiKey: KEY,
      maxResults: 5,
      timeoutMs: 30_000,
    });
    expect(config.imageGeneration).to.deep.equal({
      kind: "openai-images",
      baseUrl: "https://api.openai.com/v1",
      apiKey: "sk-image",
      model: "gpt-image-1",
      timeoutMs: 120_000,
    });
  });

  it("takes searxng without a key but not without its baseUrl", () => {
    expect(parse({ webSearch: { kind: "searxng", baseUrl: "http://127.0.0.1:8888/" } }).webSearch).to.include({
      baseUrl: "http://127.0.0.1:8888",
      apiKey: "",
    });
    expect(problem({ webSearch: { kind: "searxng" } })).to.equal(
      "gateway.yaml: webSearch.baseUrl: required for searxng",
    );
  });

  it("names the field of a missing or doubled key, never a key's value", () => {
    expect(problem({ webSearch: { kind: "brave" } })).to.equal(
      "gateway.yaml: webSearch: one of apiKey or apiKeyEnv is required",
    );
    const unset = problem({ webSearch: { kind: "tavily", apiKeyEnv: "TAVILY_API_KEY" } });
    expect(unset).to.equal("gateway.yaml: webSearch.apiKeyEnv: environment variable TAVILY_API_KEY is not set");
    const both = problem({ imageGeneration: { kind: "openai-images", apiKey: KEY, apiKeyEnv: "X", model: "m" } });
    expect(both).to.equal("gateway.yaml: imageGeneration: exactly one of apiKey or apiKeyEnv is required");
    expect(both).to.not.include(KEY);
  });

  it("refuses an unknown kind, a bad URL, an unknown field and an out-of-range bound", () => {
    expect(problem({ webSearch: { kind: "google", apiKey: KEY } })).to.match(/^gateway\.yaml: webSearch\.kind: /);
    expect(problem({ webSearch: { kind: "tavily", apiKey: KEY, baseUrl: "ftp://x" } })).to.equal(
      "gateway.yaml: webSearch.baseUrl: expected an http(s) URL",
    );
    expect(problem({ imageGeneration: { kind: "openai-images", apiKey: KEY, model: "m", size: "big" } })).to.match(
      /^gateway\.yaml: imageGeneration: .*size/,
    );
    expect(problem({ webSearch: { kind: "tavily", apiKey: KEY, maxResults: 50 } })).to.match(
      /^gateway\.yaml: webSearch\.maxResults: /,
    );
  });
});
