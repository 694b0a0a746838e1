// A request's bytes are built from the previous request's for the elements they share (providers/request-body.ts):
// they must be exactly JSON.stringify's bytes of the projection, for every endpoint kind, on the first call and on
// every later call of a conversation that reuses the earlier elements.
import { expect } from "chai";
import fc from "fast-check";
import { projectAnthropicRequest } from "../../providers/anthropic.js";
import { projectHistory, type CanonicalMessage, type InlineImage } from "../../providers/messages.js";
import { projectChatRequest } from "../../providers/openai-chat.js";
import { projectResponsesRequest } from "../../providers/openai-responses.js";
import { encodeBody } from "../../providers/request-body.js";
import type { ModelRequest, ModelToolCall, ReplayState, ToolDefinition } from "../../providers/types.js";

/** Text with quotes, escapes, non-ASCII and astral characters, and lone surrogates JSON.stringify must escape. */
const text = fc.string({ unit: fc.constantFrom("a", " ", '"', "\\", "\n", "é", "中", "𝄞", "\ud800", "<", "\u2028") });

const image: fc.Arbitrary<InlineImage> = fc.record({
  type: fc.constant("base64" as const),
  mediaType: fc.constantFrom("image/png", "image/jpeg"),
  data: fc.base64String(),
});
const images = fc.option(fc.array(image, { minLength: 1, maxLength: 2 }), { nil: undefined });

/** Each endpoint's replay state, or none; Responses' items name the round's calls, as that endpoint returned them. */
const replayKind = fc.constantFrom("none", "openai-chat", "anthropic", "openai-responses");

function replayState(kind: string, reasoning: string, calls: readonly ModelToolCall[]): ReplayState | undefined {
  switch (kind) {
    case "openai-chat":
      return { provider: "openai-chat", reasoningContent: reasoning };
    case "anthropic":
      return { provider: "anthropic", blocks: [{ type: "thinking", thinking: reasoning, signature: "c2ln" }] };
    case "openai-responses":
      return {
        provider: "openai-responses",
        items: [
          { type: "reasoning", encrypted_content: reasoning, summary: [] },
          ...calls.map((c) => ({ type: "function_call", call_id: c.id, name: c.name, arguments: c.argumentsJson })),
        ],
      };
    default:
      return undefined;
  }
}

/** One turn: a user message, then rounds of calls with their results (in completion order), then an answer. */
const turn = (n: number): fc.Arbitrary<CanonicalMessage[]> =>
  fc
    .record({
      prompt: text,
      images,
      rounds: fc.array(
        fc.record({
          text,
          replay: replayKind,
          reasoning: text,
          args: fc.array(fc.dictionary(text, text), { maxLength: 3 }),
        }),
        { maxLength: 2 },
      ),
      answer: text,
    })
    .map(({ prompt, images: attached, rounds, answer }) => [
      { role: "user", content: prompt, origin: "runtime", ...(attached ? { images: attached } : {}) },
      ...rounds.flatMap((round, r): CanonicalMessage[] => {
        const calls = round.args.map((args, i) => ({
          id: `call_${n}_${r}_${i}`,
          name: "Read",
          argumentsJson: JSON.stringify(args),
          index: i,
        }));
        const replay = replayState(round.replay, round.reasoning, calls);
        return [
          { role: "assistant", text: round.text, ...(replay ? { replay } : {}), toolCalls: calls },
          ...calls.toReversed().map(
            (call): CanonicalMessage => ({
              role: "tool",
              toolCallId: call.id,
              toolName: "Read",
              content: call.argumentsJson,
              isError: false,
            }),
          ),
        ];
      }),
      { role: "assistant", text: answer, toolCalls: [] },
    ]);

const TOOLS: ToolDefinition[] = [
  { name: "Read", description: 'Reads a "file"', parameters: { type: "object", properties: { path: {} } } },
];

const PROJECTIONS = {
  chat: { project: projectChatRequest, list: "messages" },
  anthropic: { project: projectAnthropicRequest, list: "messages" },
  responses: { project: projectResponsesRequest, list: "input" },
} as const;

describe("provider request bytes built from the previous request's", () => {
  for (const [kind, { project, list }] of Object.entries(PROJECTIONS)) {
    it(`${kind}: equal JSON.stringify's on every call of a growing conversation`, () => {
      fc.assert(
        fc.property(fc.tuple(turn(0), turn(1), turn(2)), text, fc.boolean(), (turns, system, withTools) => {
          const history: CanonicalMessage[] = [];
          for (const added of turns) {
            history.push(...added);
            const request: ModelRequest = {
              model: "m",
              system,
              tools: withTools ? TOOLS : [],
              messages: projectHistory(history),
              promptCacheKey: "conversation",
            };
            const body = (project as (r: ModelRequest) => object)(request);
            const bytes = encodeBody(body, list as never);
            expect(Buffer.concat(bytes).toString("utf8")).to.equal(JSON.stringify(body));
            expect(Buffer.concat(bytes).equals(Buffer.from(JSON.stringify(body)))).to.equal(true);
          }
        }),
        { numRuns: 150 },
      );
    });
  }

  for (const [kind, { project, list }] of Object.entries(PROJECTIONS)) {
    it(`${kind}: stays exact over a 120-call conversation, whose pieces are joined again and again`, () => {
      const history: CanonicalMessage[] = [];
      for (let call = 0; call < 120; call++) {
        history.push(
          { role: "user", content: `prompt ${call} "quoted" é`, origin: "runtime" },
          { role: "assistant", text: `answer ${call}`, toolCalls: [] },
        );
        const request: ModelRequest = { model: "m", system: "s", tools: TOOLS, messages: projectHistory(history) };
        const body = (project as (r: ModelRequest) => object)(request);
        const pieces = encodeBody(body, list as never);
        expect(pieces.length).to.be.below(40);
        expect(Buffer.concat(pieces).toString("utf8")).to.equal(JSON.stringify(body));
      }
    });
  }

  it("projects a history message to the same object on every call, so its bytes are reused", () => {
    const history: CanonicalMessage[] = [{ role: "user", content: "hi", origin: "user" }];
    const first = projectHistory(history);
    history.push({ role: "assistant", text: "hello", toolCalls: [] });
    const second = projectHistory(history);
    expect(second[0]).to.equal(first[0]);
    expect(second).to.have.length(2);
  });
});
