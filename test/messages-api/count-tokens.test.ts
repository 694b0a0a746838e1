// count_tokens for models that are not passed through (messages-api/count-tokens.ts): OpenAI's models with their
// own encoding (o200k_base for gpt-4.1, cl100k_base for gpt-4), every other model by the four-bytes estimate,
// images at a flat rate, special-token strings counted as text.
import { expect } from "chai";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens, IMAGE_TOKENS } from "../../messages-api/count-tokens.js";
import type { ModelRequest } from "../../providers/types.js";

const SYSTEM = "You are terse.";
const USER = "Wie viele Tokens hat dieser Satz? 这句话有多少个词元？ <|endoftext|>";

const request = (model: string, extra: Partial<ModelRequest> = {}): ModelRequest => ({
  model,
  system: SYSTEM,
  tools: [],
  messages: [{ role: "user", content: USER }],
  ...extra,
});

const raw = { disallowedSpecial: new Set<string>() };
/** Three overheads of three tokens: the system prompt, the one message, and the answer's priming. */
const overhead = 3 * 3;

describe("messages-api: count_tokens for non-Anthropic models", () => {
  it("counts an OpenAI model with its own encoding", async () => {
    const expected = o200k(SYSTEM, raw) + o200k(USER, raw) + overhead;
    expect(await countTokens(request("gpt-4.1"), "openai-chat")).to.equal(expected);
    expect(await countTokens(request("gpt-5-codex"), "openai-responses")).to.equal(expected);
    const older = cl100k(SYSTEM, raw) + cl100k(USER, raw) + overhead;
    expect(older).not.to.equal(expected);
    expect(await countTokens(request("gpt-4"), "openai-chat")).to.equal(older);
  });

  it("estimates any other model at four bytes per token", async () => {
    const bytes = Buffer.byteLength(SYSTEM) + Buffer.byteLength(USER);
    expect(await countTokens(request("deepseek-chat"), "openai-chat")).to.equal(Math.ceil(bytes / 4));
  });

  it("counts tool definitions, calls and results, and each image at a flat rate", async () => {
    const tools = [{ name: "Bash", description: "Run a command", parameters: { type: "object" } }];
    const withTools = request("deepseek-chat", {
      tools,
      messages: [
        { role: "user", content: "ls", images: [{ type: "base64", mediaType: "image/png", data: "A".repeat(4000) }] },
        { role: "assistant", text: "", toolCalls: [{ id: "c", name: "Bash", argumentsJson: '{"command":"ls"}' }] },
        { role: "tool", toolCallId: "c", content: "a.txt", images: [{ type: "url", url: "https://example.com/s" }] },
      ],
    });
    const texts = [SYSTEM, JSON.stringify(tools), "ls", "", "Bash", '{"command":"ls"}', "a.txt"];
    const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
    expect(await countTokens(withTools, "openai-chat")).to.equal(Math.ceil(bytes / 4) + 2 * IMAGE_TOKENS);
  });
});
