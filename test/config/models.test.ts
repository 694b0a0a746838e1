// resolveModel: configured models first, then the run's own credentials (API key with the provider chosen from the
// key and base URL, Azure OpenAI deployments), Bedrock refused with failed_precondition, and the client's effort /
// max mode carried to the model request. No message ever quotes a credential.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import { parseConfig } from "../../engine/config.js";
import { promptCacheKeyOf, resolveModel } from "../../engine/models.js";
import { RunSetupError } from "../../engine/run-errors.js";
import { RequestedModelSchema } from "../../proto/gen/agent/v1/agent_pb.js";

const SECRET = "sk-ant-api03-DO-NOT-LEAK-5a1f";
const requested = (init: MessageInitShape<typeof RequestedModelSchema>) => create(RequestedModelSchema, init);
const apiKey = (key: string, baseUrl?: string) => ({
  case: "apiKeyCredentials" as const,
  value: { apiKey: key, ...(baseUrl === undefined ? {} : { baseUrl }) },
});

function setupError(run: () => unknown): RunSetupError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(RunSetupError);
    return error as RunSetupError;
  }
  return expect.fail("expected a RunSetupError");
}

describe("model resolution", () => {
  const config = parseConfig(
    [
      "models:",
      "  - {id: claude, provider: anthropic, baseUrl: https://api.anthropic.com/, apiKey: k1, model: claude-sonnet-4-5, maxOutputTokens: 16000}",
      "  - {id: azure-gpt, provider: openai-chat, baseUrl: https://res.openai.azure.com/openai/deployments/gpt4o, apiKey: k2, model: gpt-4o, azureApiVersion: 2024-10-21}",
    ].join("\n"),
    "gateway.yaml",
  );

  it("serves a configured anthropic model from the config, whatever credentials the request carries", () => {
    const resolved = resolveModel(config.models, requested({ modelId: "claude", credentials: apiKey("sk-other") }));
    expect(resolved).to.deep.equal({
      endpoint: { kind: "anthropic", baseUrl: "https://api.anthropic.com", apiKey: "k1" },
      model: "claude-sonnet-4-5",
      contextWindow: undefined,
      maxOutputTokens: 16000,
      reasoningEffort: undefined,
      images: true,
      promptCacheKey: false,
    });
  });

  it("takes images unless the model is configured with images: false; the user's own keys always do", () => {
    const off = parseConfig(
      "models:\n  - {id: m, provider: openai-chat, baseUrl: http://h/v1, apiKey: k, model: m, images: false}",
      "gateway.yaml",
    );
    expect(resolveModel(off.models, requested({ modelId: "m" })).images).to.equal(false);
    expect(resolveModel(config.models, requested({ modelId: "azure-gpt" })).images).to.equal(true);
    expect(resolveModel([], requested({ modelId: "x", credentials: apiKey("sk-user") })).images).to.equal(true);
  });

  it("sends a prompt_cache_key to OpenAI's own API, elsewhere only when the model config asks", () => {
    const openai = parseConfig(
      [
        "models:",
        "  - {id: a, provider: openai-responses, baseUrl: https://api.openai.com/v1, apiKey: k, model: gpt-5}",
        "  - {id: b, provider: openai-chat, baseUrl: https://llm.example/v1, apiKey: k, model: m}",
        "  - {id: c, provider: openai-chat, baseUrl: https://llm.example/v1, apiKey: k, model: m, promptCacheKey: true}",
        "  - {id: d, provider: openai-chat, baseUrl: https://api.openai.com/v1, apiKey: k, model: m, promptCacheKey: false}",
      ].join("\n"),
      "gateway.yaml",
    );
    const keyed = ["a", "b", "c", "d"].map(
      (id) => resolveModel(openai.models, requested({ modelId: id })).promptCacheKey,
    );
    expect(keyed).to.deep.equal([true, false, true, false]);
    const byKey = resolveModel([], requested({ modelId: "m", credentials: apiKey("sk-x") }));
    expect(byKey.promptCacheKey).to.equal(true);
    expect(() =>
      parseConfig(
        "models:\n  - {id: x, provider: anthropic, baseUrl: https://api.anthropic.com, apiKey: k, model: m, promptCacheKey: true}",
        "gateway.yaml",
      ),
    ).to.throw(/promptCacheKey: applies only to the OpenAI kinds/);
    expect(promptCacheKeyOf("conv-1")).to.equal(promptCacheKeyOf("conv-1")).and.not.include("conv-1");
    expect(promptCacheKeyOf("conv-1")).to.not.equal(promptCacheKeyOf("conv-2"));
  });

  it("serves a configured Azure deployment with its api-version", () => {
    const { endpoint } = resolveModel(config.models, requested({ modelId: "azure-gpt" }));
    expect(endpoint).to.deep.equal({
      kind: "openai-chat",
      baseUrl: "https://res.openai.azure.com/openai/deployments/gpt4o",
      apiKey: "k2",
      azureApiVersion: "2024-10-21",
    });
  });

  it("refuses azureApiVersion on a provider other than openai-chat", () => {
    expect(() =>
      parseConfig(
        "models: [{id: c, provider: anthropic, baseUrl: 'https://x', apiKey: k, model: m, azureApiVersion: v}]",
        "g.yaml",
      ),
    ).to.throw("models[0].azureApiVersion: applies only to provider openai-chat");
  });

  describe("api_key_credentials", () => {
    const cases: Array<[string, string, string | undefined, { kind: string; baseUrl: string }]> = [
      [
        "an OpenAI key without base_url",
        "sk-proj-abc",
        undefined,
        { kind: "openai-chat", baseUrl: "https://api.openai.com/v1" },
      ],
      [
        "an Anthropic key without base_url",
        SECRET,
        undefined,
        { kind: "anthropic", baseUrl: "https://api.anthropic.com" },
      ],
      [
        "a base_url on api.anthropic.com (its /v1 dropped)",
        "any-key",
        "https://api.anthropic.com/v1/",
        { kind: "anthropic", baseUrl: "https://api.anthropic.com" },
      ],
      [
        "an Anthropic key with a proxy base_url",
        SECRET,
        "http://127.0.0.1:8080/",
        { kind: "anthropic", baseUrl: "http://127.0.0.1:8080" },
      ],
      [
        "any other key with an OpenAI-compatible base_url",
        "sk-or-v1-abc",
        "https://openrouter.ai/api/v1/",
        { kind: "openai-chat", baseUrl: "https://openrouter.ai/api/v1" },
      ],
    ];
    for (const [what, key, baseUrl, expected] of cases) {
      it(`routes ${what} to ${expected.kind}`, () => {
        const { endpoint, model } = resolveModel(
          [],
          requested({ modelId: "some-model", credentials: apiKey(key, baseUrl) }),
        );
        expect(endpoint).to.deep.equal({ ...expected, apiKey: key });
        expect(model).to.equal("some-model");
      });
    }

    it("refuses a base_url that is not a URL without quoting it", () => {
      const error = setupError(() =>
        resolveModel([], requested({ modelId: "m", credentials: apiKey(SECRET, `not a url ${SECRET}`) })),
      );
      expect(error.code).to.equal("invalid_argument");
      expect(error.message).not.to.include(SECRET);
    });
  });

  describe("azure_credentials", () => {
    const azure = (value: { apiKey?: string; baseUrl?: string; deployment?: string }) => ({
      case: "azureCredentials" as const,
      value,
    });

    for (const baseUrl of [
      "https://res.openai.azure.com",
      "https://res.openai.azure.com/",
      "https://res.openai.azure.com/openai/",
    ]) {
      it(`targets the deployment's Chat Completions route with api-key auth (base_url ${baseUrl})`, () => {
        const { endpoint } = resolveModel(
          [],
          requested({ modelId: "gpt-4o", credentials: azure({ apiKey: SECRET, baseUrl, deployment: "prod gpt" }) }),
        );
        expect(endpoint).to.deep.equal({
          kind: "openai-chat",
          baseUrl: "https://res.openai.azure.com/openai/deployments/prod%20gpt",
          apiKey: SECRET,
          azureApiVersion: "2024-10-21",
        });
      });
    }

    it("refuses incomplete credentials, naming the missing fields and never the key", () => {
      const error = setupError(() =>
        resolveModel([], requested({ modelId: "m", credentials: azure({ apiKey: SECRET }) })),
      );
      expect(error.code).to.equal("invalid_argument");
      expect(error.message).to.include("base_url, deployment").and.not.include(SECRET);
    });
  });

  it('refuses bedrock_credentials with failed_precondition "not supported", never quoting them', () => {
    const credentials = {
      case: "bedrockCredentials" as const,
      value: { accessKey: "AKIA-SECRET", secretKey: SECRET, region: "us-east-1" },
    };
    const error = setupError(() => resolveModel([], requested({ modelId: "anthropic.claude-v2", credentials })));
    expect(error.code).to.equal("failed_precondition");
    expect(error.message).to.include("Bedrock").and.include("not supported");
    expect(error.message).not.to.include(SECRET).and.not.include("AKIA-SECRET");
  });

  it("refuses a model that is neither configured nor carries credentials", () => {
    expect(setupError(() => resolveModel(config.models, requested({ modelId: "gpt-5" }))).code).to.equal(
      "failed_precondition",
    );
  });

  describe("model parameters", () => {
    const effortOf = (init: MessageInitShape<typeof RequestedModelSchema>) =>
      resolveModel(config.models, requested({ modelId: "claude", ...init })).reasoningEffort;

    it("carries the effort parameter, and max mode without one as high", () => {
      expect(
        effortOf({
          parameters: [
            { id: "effort", value: "low" },
            { id: "fast", value: "true" },
          ],
        }),
      ).to.equal("low");
      expect(effortOf({ parameters: [{ id: "effort", value: "MEDIUM" }], maxMode: true })).to.equal("medium");
      expect(effortOf({ maxMode: true })).to.equal("high");
      expect(effortOf({ parameters: [{ id: "fast", value: "true" }] })).to.equal(undefined);
    });

    it("refuses an effort it does not know rather than guessing", () => {
      const error = setupError(() => effortOf({ parameters: [{ id: "effort", value: "extreme" }] }));
      expect(error.code).to.equal("invalid_argument");
      expect(error.message).to.include('effort="extreme"');
    });
  });
});
