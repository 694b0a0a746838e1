// What goes on the wire to /v1/messages, projected from one canonical history with text, thinking (signed and
// redacted), parallel tool calls and results delivered out of order (docs/protocol/cursor-run.md §8.1, §8.4, §8.5): no
// dangling tool_use, results as strings in one user message, replay blocks first and unmodified, request N+1 extending
// request N, and a history from another endpoint still giving a valid request.
import { expect } from "chai";
import {
  createAnthropicAdapter,
  projectAnthropicRequest,
  type AnthropicMessage,
  type AnthropicRequest,
} from "../../providers/anthropic.js";
import { projectHistory, type CanonicalMessage } from "../../providers/messages.js";
import type { ModelRequest, ReasoningEffort, ReplayState } from "../../providers/types.js";
import { breakpointsAt, withoutBreakpoints } from "../support/anthropic-breakpoints.js";
import { drain } from "./model-events.js";
import { readFixture, startReplayServer } from "./replay-server.js";

const SYSTEM = "You are a coding agent.";
const READ_PARAMETERS = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
const TOOLS = [{ name: "Read", description: "Read a file", parameters: READ_PARAMETERS }];
const THINKING = {
  type: "thinking",
  thinking: "Both files are needed; read them in parallel.",
  signature: "EqQBCkYIBxgCKkBsig+/==",
};
const REDACTED = { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw" };
const ANTHROPIC_REPLAY: ReplayState = { provider: "anthropic", blocks: [THINKING, REDACTED] };

const user = (content: string): CanonicalMessage => ({ role: "user", content, origin: "runtime" });
const result = (toolCallId: string, content: string): CanonicalMessage => ({
  role: "tool",
  toolCallId,
  toolName: "Read",
  content,
  isError: false,
  toolRoundId: "round-1",
});

/** A tool round answered out of order: call b (index 1) completed before call a (index 0). */
function roundWith(replay: ReplayState | undefined): CanonicalMessage[] {
  return [
    {
      role: "assistant",
      text: "Reading both.",
      thinking: "Both files are needed; read them in parallel.",
      ...(replay ? { replay } : {}),
      toolRoundId: "round-1",
      toolCalls: [
        { id: "toolu_b", name: "Read", argumentsJson: '{"path":"b.ts"}', index: 1 },
        { id: "toolu_a", name: "Read", argumentsJson: '{"path":"a.ts"}', index: 0 },
      ],
    },
    result("toolu_b", '{"merge":false,"todos":[]}'),
    result("toolu_a", "export const a = 1;\n"),
  ];
}

const FIRST: CanonicalMessage[] = [{ role: "system", content: SYSTEM }, user("Read a.ts and b.ts")];
const SECOND: CanonicalMessage[] = [...FIRST, ...roundWith(ANTHROPIC_REPLAY)];
const THIRD: CanonicalMessage[] = [
  ...SECOND,
  { role: "assistant", text: "a.ts exports a; b.ts is a todo list.", toolCalls: [] },
  user("thanks"),
];

const request = (history: CanonicalMessage[], extra: Partial<ModelRequest> = {}): AnthropicRequest =>
  projectAnthropicRequest({
    model: "claude-sonnet-4-5",
    system: SYSTEM,
    tools: TOOLS,
    messages: projectHistory(history),
    ...extra,
  });

type Block = Record<string, unknown>;
const EPHEMERAL = { cache_control: { type: "ephemeral" } };

const blocks = (message: AnthropicMessage | undefined): Block[] =>
  Array.isArray(message?.content) ? (message.content as Block[]) : [];

/** Every tool_use is answered in the very next user message, and every tool_result answers the turn before it. */
function danglingProblems(messages: AnthropicMessage[]): string[] {
  const problems: string[] = [];
  messages.forEach((message, i) => {
    const uses = blocks(message)
      .filter((b) => b.type === "tool_use")
      .map((b) => b.id);
    const answered = blocks(messages[i + 1])
      .filter((b) => b.type === "tool_result")
      .map((b) => b.tool_use_id);
    if (message.role === "assistant" && [...uses].sort().join() !== [...answered].sort().join())
      problems.push(`message ${i}: ${uses} answered by ${answered}`);
    const results = blocks(message)
      .filter((b) => b.type === "tool_result")
      .map((b) => b.tool_use_id);
    const asked = blocks(messages[i - 1])
      .filter((b) => b.type === "tool_use")
      .map((b) => b.id);
    if (results.some((id) => !asked.includes(id))) problems.push(`message ${i}: results ${results} for calls ${asked}`);
  });
  return problems;
}

/** thinking (with its signature deltas joined) and redacted_thinking blocks, from a recording's raw records. */
function expectedBlocks(sse: string): Block[] {
  const out: Block[] = [];
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ")) continue;
    const event = JSON.parse(line.slice(6));
    if (event.type === "content_block_start" && event.content_block.type === "redacted_thinking")
      out.push({ type: "redacted_thinking", data: event.content_block.data });
    if (event.type === "content_block_start" && event.content_block.type === "thinking")
      out.push({ type: "thinking", thinking: "", signature: "" });
    const last = out.at(-1);
    if (event.type === "content_block_delta" && event.delta.type === "thinking_delta")
      last!.thinking = `${String(last!.thinking)}${event.delta.thinking}`;
    if (event.type === "content_block_delta" && event.delta.type === "signature_delta")
      last!.signature = `${String(last!.signature)}${event.delta.signature}`;
  }
  return out;
}

describe("Anthropic request projection", () => {
  it("projects the tool round exactly: replay blocks first, calls in provider order, results as strings in one user message", () => {
    expect(request(SECOND)).to.deep.equal({
      model: "claude-sonnet-4-5",
      max_tokens: 8192,
      system: [{ type: "text", text: SYSTEM, ...EPHEMERAL }],
      messages: [
        // The previous call's last message and this call's last block carry the moving cache breakpoints.
        { role: "user", content: [{ type: "text", text: "Read a.ts and b.ts", ...EPHEMERAL }] },
        {
          role: "assistant",
          content: [
            THINKING,
            REDACTED,
            { type: "text", text: "Reading both." },
            { type: "tool_use", id: "toolu_a", name: "Read", input: { path: "a.ts" } },
            { type: "tool_use", id: "toolu_b", name: "Read", input: { path: "b.ts" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_b", content: '{"merge":false,"todos":[]}' },
            { type: "tool_result", tool_use_id: "toolu_a", content: "export const a = 1;\n", ...EPHEMERAL },
          ],
        },
      ],
      tools: [{ name: "Read", description: "Read a file", input_schema: READ_PARAMETERS }],
      stream: true,
    });
  });

  it("leaves no dangling tool_use and sends every result as a string", () => {
    for (const history of [SECOND, THIRD]) {
      const { messages } = request(history);
      expect(danglingProblems(messages)).to.deep.equal([]);
      const results = messages.flatMap(blocks).filter((b) => b.type === "tool_result");
      expect(results).to.have.length(2);
      expect(results.every((b) => typeof b.content === "string")).to.equal(true);
    }
  });

  it("never projects an unfinished round: the calls of a round missing a result are left out", () => {
    const unfinished = [...FIRST, ...roundWith(ANTHROPIC_REPLAY).slice(0, 2), user("what happened?")];
    const { messages } = request(unfinished);
    expect(withoutBreakpoints(messages)).to.deep.equal([
      { role: "user", content: "Read a.ts and b.ts" },
      { role: "user", content: "what happened?" },
    ]);
  });

  it("replays the thinking blocks byte for byte, unmodified, and never the displayable thinking", () => {
    const before = JSON.stringify(ANTHROPIC_REPLAY);
    const assistant = request(SECOND).messages[1]!;
    expect(JSON.stringify(blocks(assistant).slice(0, 2))).to.equal(JSON.stringify([THINKING, REDACTED]));
    expect(JSON.stringify(ANTHROPIC_REPLAY)).to.equal(before);
    expect(
      blocks(assistant)
        .filter((b) => b.type === "text")
        .map((b) => b.text),
    ).to.deep.equal(["Reading both."]);
  });

  it("extends request N with request N+1: same system and tools, earlier messages byte-identical", () => {
    const requests = [FIRST, SECOND, THIRD].map((history) => request(history));
    for (let n = 1; n < requests.length; n++) {
      const [earlier, later] = [requests[n - 1]!, requests[n]!];
      expect(JSON.stringify(later.system)).to.equal(JSON.stringify(earlier.system));
      expect(JSON.stringify(later.tools)).to.equal(JSON.stringify(earlier.tools));
      // Only the cache markers move (the next test); the content before them never changes.
      const prefix = JSON.stringify(withoutBreakpoints(earlier.messages)).slice(0, -1);
      expect(JSON.stringify(withoutBreakpoints(later.messages)).startsWith(prefix)).to.equal(true);
      expect(later.messages.length).to.be.greaterThan(earlier.messages.length);
    }
    expect(JSON.stringify(request(THIRD))).to.equal(JSON.stringify(request(THIRD)));
  });

  it("marks this call's last message and the previous call's, so each call reads the last one's prefix at a breakpoint", () => {
    const requests = [FIRST, SECOND, THIRD].map((history) => request(history));
    expect(requests.map((r) => breakpointsAt(r.messages))).to.deep.equal([[0], [0, 2], [2, 4]]);
    for (let n = 1; n < requests.length; n++) {
      const [earlier, later] = [requests[n - 1]!, requests[n]!];
      const tail = earlier.messages.length - 1;
      // The message that ended call N keeps its breakpoint, on the same block, in call N+1.
      expect(JSON.stringify(later.messages[tail])).to.equal(JSON.stringify(earlier.messages[tail]));
    }
    for (const r of requests) {
      const count = JSON.stringify(r).split('"cache_control"').length - 1;
      expect(count).to.be.at.most(4);
    }
  });

  it("puts no breakpoint on an empty text", () => {
    const body = projectAnthropicRequest({
      model: "m",
      system: "",
      tools: [],
      messages: [{ role: "user", content: "" }],
    });
    expect(body.messages).to.deep.equal([{ role: "user", content: "" }]);
  });

  describe("a conversation that switches endpoint mid-way", () => {
    const foreign: ReplayState[] = [
      { provider: "openai-chat", reasoningContent: "raw chat reasoning" },
      {
        provider: "openai-responses",
        items: [{ type: "reasoning", id: "rs_1", encrypted_content: "gAAAA", summary: [] }],
      },
    ];

    for (const replay of foreign) {
      it(`ignores ${replay.provider} replay state: no thinking block is forged`, () => {
        const { messages } = request([...FIRST, ...roundWith(replay)]);
        const assistant = blocks(messages[1]);
        expect(assistant.map((b) => b.type)).to.deep.equal(["text", "tool_use", "tool_use"]);
        expect(JSON.stringify(messages)).not.to.include("reasoning").and.not.include("encrypted_content");
        expect(danglingProblems(messages)).to.deep.equal([]);
      });

      it(`calls without thinking while the open tool loop began on ${replay.provider}, with thinking once a new turn starts`, () => {
        const inLoop = request([...FIRST, ...roundWith(replay)], { reasoningEffort: "high" });
        expect(inLoop).not.to.have.property("thinking");
        expect(inLoop.max_tokens).to.equal(8192);
        const nextTurn = request(
          [...FIRST, ...roundWith(replay), { role: "assistant", text: "done", toolCalls: [] }, user("more")],
          { reasoningEffort: "high" },
        );
        expect(nextTurn.thinking).to.deep.equal({ type: "enabled", budget_tokens: 16384 });
      });
    }

    it("keeps thinking on inside a tool loop whose turn starts with its own thinking block", () => {
      expect(request(SECOND, { reasoningEffort: "medium" }).thinking).to.deep.equal({
        type: "enabled",
        budget_tokens: 8192,
      });
    });
  });

  describe("reasoning effort", () => {
    const cases: Array<[ReasoningEffort | undefined, number | undefined]> = [
      [undefined, undefined],
      ["none", undefined],
      ["minimal", 1024],
      ["low", 2048],
      ["medium", 8192],
      ["high", 16384],
      ["xhigh", 32768],
    ];
    for (const [effort, budget] of cases) {
      it(`maps effort ${effort ?? "(unset)"} to ${budget === undefined ? "no thinking" : `a ${budget}-token budget on top of the answer allowance`}`, () => {
        const body = request(FIRST, { maxOutputTokens: 4000, ...(effort ? { reasoningEffort: effort } : {}) });
        expect(body.thinking).to.deep.equal(
          budget === undefined ? undefined : { type: "enabled", budget_tokens: budget },
        );
        expect(body.max_tokens).to.equal(4000 + (budget ?? 0));
      });
    }
  });

  it("leaves out an assistant turn with nothing in it, and a system block when there is no system prompt", () => {
    const body = projectAnthropicRequest({
      model: "m",
      system: "",
      tools: [],
      messages: [
        { role: "user", content: "u" },
        { role: "assistant", text: "", toolCalls: [] },
        { role: "user", content: "again" },
      ],
    });
    expect(body).to.deep.equal({
      model: "m",
      max_tokens: 8192,
      messages: [
        { role: "user", content: "u" },
        { role: "user", content: [{ type: "text", text: "again", ...EPHEMERAL }] },
      ],
      stream: true,
    });
  });

  it("round-trips the recorded thinking and redacted_thinking blocks into the next request exactly as streamed", async () => {
    for (const name of ["thinking-then-text.sse", "redacted-thinking-then-text.sse"]) {
      const recorded = readFixture(`anthropic/${name}`).toString("utf8");
      const server = await startReplayServer(() => ({ body: recorded }));
      try {
        const adapter = createAnthropicAdapter({
          kind: "anthropic",
          baseUrl: server.baseUrl.replace(/\/v1$/, ""),
          apiKey: "k",
        });
        const { events, error } = await drain(adapter, {
          model: "m",
          system: "s",
          tools: [],
          messages: [{ role: "user", content: "hi" }],
        });
        expect(error, name).to.equal(undefined);
        const done = events.at(-1);
        const replay = done?.type === "done" ? done.replay : undefined;
        const text = events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("");
        const next = request([
          ...FIRST,
          { role: "assistant", text, ...(replay ? { replay } : {}), toolCalls: [] },
          user("more"),
        ]);
        const sent = blocks(next.messages[1]);
        // The blocks as the recording streamed them, rebuilt here from its raw records.
        const expected = expectedBlocks(recorded);
        expect(expected.length, name).to.be.greaterThan(0);
        expect(JSON.stringify(sent.slice(0, expected.length)), name).to.equal(JSON.stringify(expected));
        expect(sent.slice(expected.length), name).to.deep.equal([{ type: "text", text }]);
      } finally {
        await server.close();
      }
    }
  });

  it("POSTs the projected body, byte-identical for equal requests, to {baseUrl}/v1/messages", async () => {
    const stop = [
      { type: "message_start", message: { usage: {} } },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "ok" } },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: "end_turn" } },
      { type: "message_stop" },
    ]
      .map((payload) => `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`)
      .join("");
    const server = await startReplayServer(() => ({ body: stop }));
    try {
      const adapter = createAnthropicAdapter({
        kind: "anthropic",
        baseUrl: `${server.baseUrl.replace(/\/v1$/, "")}/`,
        apiKey: "sk-ant-k",
      });
      const modelRequest: ModelRequest = {
        model: "claude-sonnet-4-5",
        system: SYSTEM,
        tools: TOOLS,
        messages: projectHistory(THIRD),
      };
      for (let i = 0; i < 2; i++) expect((await drain(adapter, modelRequest)).error).to.equal(undefined);
      const [first, second] = server.requests;
      expect(first!.url).to.equal("/v1/messages");
      expect(first!.headers["content-type"]).to.equal("application/json");
      expect(first!.body).to.equal(JSON.stringify(projectAnthropicRequest(modelRequest)));
      expect(second!.body).to.equal(first!.body);
    } finally {
      await server.close();
    }
  });
});
