import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadConfig, parseConfig } from "../../engine/config.js";

const secret = "sk-live-DO-NOT-LEAK-0123456789";

function configError(text: string, env: NodeJS.ProcessEnv = {}): ConfigError {
  try {
    parseConfig(text, "gateway.yaml", env);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  expect.fail("expected a ConfigError");
}

const model = (fields: Record<string, unknown>) =>
  JSON.stringify({
    models: [
      {
        id: "gpt",
        provider: "openai-chat",
        baseUrl: "https://api.openai.com/v1",
        model: "gpt-5",
        apiKey: secret,
        ...fields,
      },
    ],
  });

describe("gateway config", () => {
  it("parses YAML models with an inline key and resolves apiKeyEnv from the environment", () => {
    const config = parseConfig(
      [
        "models:",
        "  - id: gpt",
        "    provider: openai-responses",
        "    baseUrl: https://api.openai.com/v1/",
        "    apiKey: inline-key",
        "    model: gpt-5",
        "    contextWindow: 400000",
        "    maxOutputTokens: 128000",
        "  - id: claude",
        "    provider: anthropic",
        "    baseUrl: https://api.anthropic.com",
        "    apiKeyEnv: ANTHROPIC_KEY_FOR_TEST",
        "    model: claude-sonnet-4-5",
      ].join("\n"),
      "gateway.yaml",
      { ANTHROPIC_KEY_FOR_TEST: "env-key" },
    );
    expect(config.models).to.deep.equal([
      {
        id: "gpt",
        provider: "openai-responses",
        baseUrl: "https://api.openai.com/v1",
        apiKey: "inline-key",
        model: "gpt-5",
        contextWindow: 400000,
        maxOutputTokens: 128000,
      },
      {
        id: "claude",
        provider: "anthropic",
        baseUrl: "https://api.anthropic.com",
        apiKey: "env-key",
        apiKeyEnv: "ANTHROPIC_KEY_FOR_TEST",
        model: "claude-sonnet-4-5",
      },
    ]);
  });

  it("accepts JSON, since JSON is YAML", () => {
    expect(parseConfig(model({}), "gateway.json", {}).models[0]!.apiKey).to.equal(secret);
  });

  it("strips exactly one trailing slash from baseUrl", () => {
    expect(parseConfig(model({ baseUrl: "http://localhost:8080/v1/" }), "c", {}).models[0]!.baseUrl).to.equal(
      "http://localhost:8080/v1",
    );
    expect(parseConfig(model({ baseUrl: "http://localhost:8080/v1" }), "c", {}).models[0]!.baseUrl).to.equal(
      "http://localhost:8080/v1",
    );
    expect(parseConfig(model({ baseUrl: "http://localhost:8080/v1//" }), "c", {}).models[0]!.baseUrl).to.equal(
      "http://localhost:8080/v1/",
    );
  });

  it("treats an empty file as no models", () => {
    expect(parseConfig("", "c", {})).to.deep.equal({ models: [] });
    expect(parseConfig("{}", "c", {})).to.deep.equal({ models: [] });
  });

  it("accepts and keeps aep and workers", () => {
    const config = parseConfig(
      // aep.workdir must exist: the temp dir does.
      JSON.stringify({
        aep: { port: 9000, host: "127.0.0.1", token: "t", workdir: tmpdir() },
        workers: { "claude-code": { command: "claude" } },
      }),
      "c",
      {},
    );
    expect(config.aep).to.deep.equal({ port: 9000, host: "127.0.0.1", token: "t", workdir: tmpdir() });
    expect(config.workers).to.deep.equal({ "claude-code": { command: "claude" } });
  });

  it("rejects a baseUrl that is not an http(s) URL, naming file and path", () => {
    const text = JSON.stringify({
      models: [
        { id: "a", provider: "anthropic", baseUrl: "https://ok.example", apiKey: secret, model: "m" },
        { id: "b", provider: "anthropic", baseUrl: "ftp://nope.example", apiKey: secret, model: "m" },
      ],
    });
    expect(configError(text).message).to.equal("gateway.yaml: models[1].baseUrl: expected an http(s) URL");
    expect(configError(model({ baseUrl: "not a url" })).message).to.contain(
      "models[0].baseUrl: expected an http(s) URL",
    );
  });

  it("requires exactly one of apiKey and apiKeyEnv", () => {
    const both = configError(model({ apiKeyEnv: "SOME_VAR" }), { SOME_VAR: "x" });
    expect(both.message).to.equal("gateway.yaml: models[0]: exactly one of apiKey or apiKeyEnv is required");
    const neither = configError(model({ apiKey: undefined }));
    expect(neither.message).to.equal("gateway.yaml: models[0]: exactly one of apiKey or apiKeyEnv is required");
  });

  it("names the missing environment variable", () => {
    const err = configError(model({ apiKey: undefined, apiKeyEnv: "MISSING_KEY_VAR" }), {});
    expect(err.message).to.equal("gateway.yaml: models[0].apiKeyEnv: environment variable MISSING_KEY_VAR is not set");
    expect(configError(model({ apiKey: undefined, apiKeyEnv: "EMPTY_VAR" }), { EMPTY_VAR: "" }).message).to.contain(
      "EMPTY_VAR is not set",
    );
  });

  it("rejects duplicate model ids", () => {
    const text = JSON.stringify({
      models: [
        { id: "same", provider: "anthropic", baseUrl: "https://a.example", apiKey: secret, model: "m" },
        { id: "same", provider: "openai-chat", baseUrl: "https://b.example/v1", apiKey: secret, model: "m" },
      ],
    });
    expect(configError(text).message).to.equal('gateway.yaml: models[1].id: duplicate model id "same"');
  });

  it("rejects an unknown provider, missing fields, bad numbers and unknown keys", () => {
    expect(configError(model({ provider: "gemini" })).message).to.match(/^gateway\.yaml: models\[0\]\.provider: /);
    expect(configError(model({ model: undefined })).message).to.match(/^gateway\.yaml: models\[0\]\.model: /);
    expect(configError(model({ contextWindow: 0 })).message).to.match(
      /models\[0\]\.contextWindow: expected a positive integer/,
    );
    expect(configError(model({ maxOutputTokens: 1.5 })).message).to.match(
      /models\[0\]\.maxOutputTokens: expected an integer/,
    );
    expect(configError(model({ apikey: "typo" })).message).to.match(/^gateway\.yaml: models\[0\]: .*apikey/);
    expect(configError(JSON.stringify({ modles: [] })).message).to.match(/^gateway\.yaml: \(top level\): .*modles/);
  });

  it("reports every problem, one line each", () => {
    const err = configError(model({ baseUrl: "x", contextWindow: -1 }));
    expect(err.message.split("\n")).to.have.length(2);
  });

  it("never puts a key value into an error message", () => {
    const cases = [
      model({ baseUrl: "nope" }),
      model({ apiKeyEnv: "V" }),
      model({ apiKey: 12345678901234 }),
      model({ id: "gpt", extra: secret }),
      // A YAML syntax error on the line holding the key: yaml's own message would quote that line.
      `models:\n  - id: gpt\n    apiKey: ${secret}: [\n`,
      `models:\n  - apiKey: "${secret}\n`,
    ];
    for (const text of cases) {
      const message = configError(text, { V: secret }).message;
      expect(message, text).not.to.contain(secret);
      expect(message, text).not.to.contain("12345678901234");
    }
  });

  it("reports a YAML syntax error by position", () => {
    expect(configError("models: [\n").message).to.match(
      /^gateway\.yaml: invalid YAML at line \d+, column \d+ \(\w+\)$/,
    );
  });

  it("loads from a file, naming the file in errors", () => {
    const dir = mkdtempSync(join(tmpdir(), "byok-config-"));
    const good = join(dir, "good.yaml");
    writeFileSync(good, model({}));
    expect(loadConfig(good, {}).models).to.have.length(1);
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, model({ baseUrl: "ftp://x" }));
    expect(() => loadConfig(bad, {})).to.throw(ConfigError, `${bad}: models[0].baseUrl`);
    expect(() => loadConfig(join(dir, "missing.yaml"))).to.throw(
      ConfigError,
      /missing\.yaml: cannot read config file \(ENOENT\)/,
    );
    rmSync(dir, { recursive: true, force: true });
  });

  it("loads no models without a path", () => {
    expect(loadConfig()).to.deep.equal({ models: [] });
  });
});
