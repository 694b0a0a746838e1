import { expect } from "chai";
import fc from "fast-check";
import { estimateFixedTokens, estimateTokens, tokenBreakdown } from "../../cursor/token-breakdown.js";

describe("checkpoint token breakdown (docs/protocol/cursor-run.md §9)", () => {
  it("estimates ASCII at 0.273 and other UTF-16 code units at 0.55 tokens", () => {
    expect(estimateTokens("a".repeat(1000))).to.equal(273);
    expect(estimateTokens("é".repeat(100))).to.equal(55);
    expect(estimateTokens("")).to.equal(0);
  });

  it("estimates a recurring text as estimateTokens does, however many texts came before it", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme", maxLength: 200 }), { maxLength: 80 }), (texts) => {
        for (const text of [...texts, ...texts]) expect(estimateFixedTokens(text)).to.equal(estimateTokens(text));
      }),
    );
  });

  it("has the eight categories in order, the conversation taking the remainder of the provider's total", () => {
    const b = tokenBreakdown({
      usedTokens: 5000,
      maxTokens: 128000,
      systemPrompt: "s".repeat(1000),
      toolDefinitions: "t".repeat(2000),
      rules: "r".repeat(100),
      conversationCharacters: 5,
    });
    expect(b.categories.map((c) => c.id)).to.deep.equal([
      "system_prompt",
      "tools",
      "rules",
      "skills",
      "mcp",
      "subagents",
      "summarized_conversation",
      "conversation",
    ]);
    expect(b.categories.map((c) => c.estimatedTokens)).to.deep.equal([273, 546, 27, 0, 0, 0, 0, 5000 - 273 - 546 - 27]);
    expect(b.categories[0]!.characterCount).to.equal(1000);
    expect(b.categories[7]!.characterCount).to.equal(5);
    expect(b).to.deep.include({ totalUsedTokens: 5000, maxTokens: 128000 });
  });

  it("always sums exactly to used_tokens with no negative category, even when estimates exceed it", () => {
    fc.assert(
      fc.property(
        fc.nat(50_000),
        fc.string({ maxLength: 3000 }),
        fc.string({ maxLength: 3000 }),
        fc.string({ maxLength: 500 }),
        (used, system, tools, rules) => {
          const b = tokenBreakdown({
            usedTokens: used,
            maxTokens: 0,
            systemPrompt: system,
            toolDefinitions: tools,
            rules,
            conversationCharacters: 0,
          });
          const values = b.categories.map((c) => c.estimatedTokens);
          expect(values.every((v) => v >= 0)).to.equal(true);
          expect(values.reduce((a, v) => a + v, 0)).to.equal(used);
        },
      ),
    );
  });
});
