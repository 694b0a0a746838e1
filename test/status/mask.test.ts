// The configuration the status API shows (docs/status-api.md §6): whatever its shape, no secret leaves — not whole,
// not a prefix — while the rest stays readable.
import { expect } from "chai";
import fc from "fast-check";
import { clearSecrets, registerSecrets } from "../../log/logger.js";
import { MASK, maskSecrets } from "../../status/mask.js";

/** Secrets are drawn from upper-case letters, everything else from lower-case: a leak is a visible substring. */
const secret = fc.stringMatching(/^[A-Z]{16,40}$/);
const plain = fc.stringMatching(/^[a-z0-9 ./:-]{0,30}$/);
const secretField = fc.constantFrom("apiKey", "token", "clientSecret", "password", "authorization", "x-api-key");
const plainField = fc.constantFrom("id", "model", "baseUrl", "apiKeyEnv", "tokenEnv", "maxOutputTokens", "host");

/** A config-like tree with secrets planted under credential-named fields and inside `env` maps. */
const tree: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small" },
    plain,
    fc.integer(),
    fc.boolean(),
    fc.array(tie("node"), { maxLength: 3 }),
    fc.dictionary(plainField, tie("node"), { maxKeys: 4 }),
    fc.dictionary(secretField, secret, { maxKeys: 2 }),
    fc.record({ env: fc.dictionary(fc.stringMatching(/^[a-z_]{1,12}$/), secret, { maxKeys: 3 }) }),
  ),
})).node;

describe("status: configuration masking", () => {
  afterEach(() => clearSecrets());

  it("never lets a planted secret or a 4-character piece of it through", () => {
    fc.assert(
      fc.property(tree, (config) => {
        const shown = JSON.stringify(maskSecrets(config)) ?? "";
        expect(shown).not.to.match(/[A-Z]{4}/);
      }),
    );
  });

  it("keeps what is not secret, names of variables included", () => {
    const config = {
      models: [{ id: "m", apiKey: "sk-live-123456789012", apiKeyEnv: "OPENAI_API_KEY", maxOutputTokens: 100 }],
      security: { token: "t".repeat(20), allowedHosts: ["box:8787"] },
      workers: { "claude-code": { command: "claude", env: { ANTHROPIC_API_KEY: "k", DEBUG: "1" } } },
    };
    expect(maskSecrets(config)).to.deep.equal({
      models: [{ id: "m", apiKey: MASK, apiKeyEnv: "OPENAI_API_KEY", maxOutputTokens: 100 }],
      security: { token: MASK, allowedHosts: ["box:8787"] },
      workers: { "claude-code": { command: "claude", env: { ANTHROPIC_API_KEY: MASK, DEBUG: MASK } } },
    });
  });

  it("masks a value that holds a configured secret wherever it sits", () => {
    registerSecrets(["sk-embedded-0123456789"]);
    expect(maskSecrets({ baseUrl: "https://x.example/?key=sk-embedded-0123456789", model: "m" })).to.deep.equal({
      baseUrl: MASK,
      model: "m",
    });
  });
});
