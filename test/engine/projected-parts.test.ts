// The parts of the projected history the context breakdown counts (docs/protocol/cursor-run.md §9.4): the runtime
// messages' rules / skills / MCP / subagents sections in their own parts, every other projected character as
// conversation.
import { expect } from "chai";
import fc from "fast-check";
import { addProjected, type ProjectedParts } from "../../engine/run-context.js";
import type { CanonicalMessage } from "../../providers/messages.js";

const NONE: ProjectedParts = { rules: "", skills: "", mcp: "", subagents: "", conversationCharacters: 0 };
const text = fc.string({ maxLength: 30 });
const runtime = fc
  .record({ before: text, rules: fc.option(text, { nil: undefined }), mcp: fc.option(text, { nil: undefined }) })
  .map(({ before, rules, mcp }) => ({
    content: [
      before,
      rules === undefined ? "" : `<rules>\n${rules}\n</rules>`,
      mcp === undefined ? "" : `<mcp_instructions>\n${mcp}\n</mcp_instructions>`,
    ].join("\n"),
    rules: rules ?? "",
    mcp: mcp ?? "",
  }));
const message: fc.Arbitrary<{ m: CanonicalMessage; chars: number; rules: string; mcp: string }> = fc.oneof(
  runtime.map(({ content, rules, mcp }) => ({
    m: { role: "user", content, origin: "runtime" } as CanonicalMessage,
    chars: content.length,
    rules,
    mcp,
  })),
  text.map((content) => ({
    m: { role: "user", content, origin: "user" } as CanonicalMessage,
    chars: content.length,
    rules: "",
    mcp: "",
  })),
  fc
    .record({ t: text, thinking: fc.option(text, { nil: undefined }), args: fc.array(text, { maxLength: 3 }) })
    .map(({ t, thinking, args }) => ({
      m: {
        role: "assistant",
        text: t,
        ...(thinking === undefined ? {} : { thinking }),
        toolCalls: args.map((a, i) => ({ id: `c${i}`, index: i, name: "Read", argumentsJson: a })),
      } as CanonicalMessage,
      chars: t.length + (thinking?.length ?? 0) + args.join("").length,
      rules: "",
      mcp: "",
    })),
  text.map((content) => ({
    m: { role: "tool", toolCallId: "c0", toolName: "Read", content, isError: false } as CanonicalMessage,
    chars: content.length,
    rules: "",
    mcp: "",
  })),
);

describe("projected parts of the history (addProjected)", () => {
  it("puts runtime sections in their parts and every other projected character in the conversation", () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 12 }), (messages) => {
        const parts = { ...NONE };
        for (const { m } of messages) addProjected(parts, m);
        const rules = messages.map((x) => x.rules).join("");
        const mcp = messages.map((x) => x.mcp).join("");
        expect(parts.rules).to.equal(rules);
        expect(parts.mcp).to.equal(mcp);
        expect(parts.skills + parts.subagents).to.equal("");
        const chars = messages.reduce((n, x) => n + x.chars, 0);
        expect(parts.conversationCharacters).to.equal(chars - rules.length - mcp.length);
      }),
    );
  });
});
