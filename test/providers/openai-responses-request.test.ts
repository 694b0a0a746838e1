// What goes on the wire to /responses, projected from one canonical history (docs/protocol/cursor-run.md §7.3, §8.1,
// §8.4, §8.5): text, reasoning, a parallel tool round answered out of order, and turns from other endpoints. No
// dangling calls, results as strings, this endpoint's replay items unmodified, and every request extending the one
// before it.
import { expect } from "chai";
import { projectHistory, type CanonicalMessage } from "../../providers/messages.js";
import {
  createOpenAIResponsesAdapter,
  projectResponsesRequest,
  type ResponsesRequest,
} from "../../providers/openai-responses.js";
import type { ModelRequest } from "../../providers/types.js";
import { drain } from "./model-events.js";
import { startReplayServer, type ReplayServer } from "./replay-server.js";

const KEY = "sk-request-key-5be0";
const READ = {
  type: "object",
  properties: { path: { type: "string" }, offset: { type: "integer" } },
  required: ["path"],
};
const TOOLS = [
  { name: "Read", description: "Read a file", parameters: READ },
  {
    name: "Grep",
    description: "Search files",
    parameters: { type: "object", properties: { pattern: { type: "string" } } },
  },
];

// Output items exactly as a response's output_item.done events carried them (key order and all).
const reasoning1 = {
  id: "rs_1",
  type: "reasoning",
  encrypted_content: "gAAAA-capsule-one",
  summary: [{ type: "summary_text", text: "**Plan** read both" }],
};
const commentary = {
  id: "msg_1",
  type: "message",
  status: "completed",
  content: [{ type: "output_text", annotations: [], logprobs: [], text: "Reading both." }],
  phase: "commentary",
  role: "assistant",
};
const callA = {
  id: "fc_a",
  type: "function_call",
  status: "completed",
  arguments: '{"path": "a.ts"}',
  call_id: "call_a",
  name: "Read",
};
const callB = {
  id: "fc_b",
  type: "function_call",
  status: "completed",
  arguments: '{"pattern":"TODO"}',
  call_id: "call_b",
  name: "Grep",
};
const reasoning2 = { id: "rs_2", type: "reasoning", encrypted_content: "gAAAA-capsule-two", summary: [] };
const answer = {
  id: "msg_2",
  type: "message",
  status: "completed",
  content: [{ type: "output_text", annotations: [], logprobs: [], text: "a.ts exports a." }],
  phase: "final_answer",
  role: "assistant",
};
const ORIGINAL = JSON.stringify([reasoning1, commentary, callA, callB, reasoning2, answer]);

const user = (content: string): CanonicalMessage => ({ role: "user", content, origin: "user" });
const result = (toolCallId: string, toolName: string, content: string): CanonicalMessage => ({
  role: "tool",
  toolCallId,
  toolName,
  content,
  isError: false,
  toolRoundId: "round-1",
});

/** One conversation: a Responses round (reasoning, commentary, two calls answered b-then-a), its answer, then turns
 * from other endpoints (a Chat turn with reasoning_content, an Anthropic turn with a thinking block). */
function history(): CanonicalMessage[] {
  return [
    { role: "system", content: "stored system root" },
    user("Read a.ts and grep TODO"),
    {
      role: "assistant",
      text: "Reading both.",
      thinking: "**Plan** read both",
      replay: { provider: "openai-responses", items: [reasoning1, commentary, callA, callB] },
      toolRoundId: "round-1",
      // The loop's canonical argument text is re-serialised; the replayed items keep the model's own bytes.
      toolCalls: [
        { id: "call_b", name: "Grep", argumentsJson: '{"pattern":"TODO"}', index: 1 },
        { id: "call_a", name: "Read", argumentsJson: '{"path":"a.ts"}', index: 0 },
      ],
    },
    result("call_b", "Grep", "notes.md:1: TODO"),
    result("call_a", "Read", '{"merge":false,"todos":[]}'),
    {
      role: "assistant",
      text: "a.ts exports a.",
      replay: { provider: "openai-responses", items: [reasoning2, answer] },
      toolCalls: [],
    },
    user("now with another model"),
    {
      role: "assistant",
      text: "Chat says hi.",
      thinking: "chat thinking",
      replay: { provider: "openai-chat", reasoningContent: "raw chat thinking" },
      toolCalls: [{ id: "call_c", name: "Read", argumentsJson: '{"path":"c.ts"}', index: 0 }],
      toolRoundId: "round-2",
    },
    { role: "tool", toolCallId: "call_c", toolName: "Read", content: "c", isError: true, toolRoundId: "round-2" },
    {
      role: "assistant",
      text: "Claude says hi.",
      thinking: "claude thinking",
      replay: { provider: "anthropic", blocks: [{ type: "thinking", thinking: "claude thinking", signature: "sig" }] },
      toolCalls: [],
    },
    user("back to Responses"),
  ];
}

const requestFor = (messages: CanonicalMessage[]): ModelRequest => ({
  model: "gpt-5",
  system: "You are a coding agent.",
  tools: TOOLS,
  messages: projectHistory(messages),
  maxOutputTokens: 8192,
});

const EXPECTED_INPUT = [
  { role: "user", content: "Read a.ts and grep TODO" },
  reasoning1,
  commentary,
  callA,
  callB,
  { type: "function_call_output", call_id: "call_b", output: "notes.md:1: TODO" },
  { type: "function_call_output", call_id: "call_a", output: '{"merge":false,"todos":[]}' },
  reasoning2,
  answer,
  { role: "user", content: "now with another model" },
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "Chat says hi." }] },
  { type: "function_call", call_id: "call_c", name: "Read", arguments: '{"path":"c.ts"}' },
  { type: "function_call_output", call_id: "call_c", output: "c" },
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "Claude says hi." }] },
  { role: "user", content: "back to Responses" },
];

const COMPLETED = `event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { status: "completed", output: [] } })}\n\n`;

describe("OpenAI Responses request projection", () => {
  let server: ReplayServer;

  before(async () => {
    server = await startReplayServer(() => ({ body: COMPLETED }));
  });
  after(() => server.close());

  const send = async (request: ModelRequest) => {
    const adapter = createOpenAIResponsesAdapter({
      kind: "openai-responses",
      baseUrl: `${server.baseUrl}/`,
      apiKey: KEY,
    });
    const outcome = await drain(adapter, request);
    expect(outcome.error, outcome.error?.message).to.equal(undefined);
    return server.requests.at(-1)!;
  };

  it("POSTs the whole conversation to {baseUrl}/responses: stateless, encrypted reasoning included, strict off", async () => {
    const recorded = await send(requestFor(history()));
    expect(recorded.method).to.equal("POST");
    expect(recorded.url).to.equal("/v1/responses");
    expect(recorded.headers.authorization).to.equal(`Bearer ${KEY}`);
    expect(recorded.headers["content-type"]).to.equal("application/json");
    expect(recorded.body).to.equal(
      JSON.stringify({
        model: "gpt-5",
        instructions: "You are a coding agent.",
        input: EXPECTED_INPUT,
        tools: [
          { type: "function", name: "Read", description: "Read a file", parameters: READ, strict: false },
          {
            type: "function",
            name: "Grep",
            description: "Search files",
            parameters: TOOLS[1]!.parameters,
            strict: false,
          },
        ],
        max_output_tokens: 8192,
        include: ["reasoning.encrypted_content"],
        store: false,
        stream: true,
      }),
    );
    expect(JSON.parse(recorded.body)).to.not.have.property("previous_response_id");
  });

  it("has no dangling call, only string results, and the replay items unmodified", () => {
    const input = projectResponsesRequest(requestFor(history())).input as Array<Record<string, unknown>>;
    const calls = input.filter((item) => item.type === "function_call").map((item) => item.call_id);
    const outputs = input.filter((item) => item.type === "function_call_output");
    expect(calls).to.deep.equal(["call_a", "call_b", "call_c"]);
    expect(outputs.map((item) => item.call_id).sort()).to.deep.equal([...calls].sort());
    for (const output of outputs) {
      expect(output.output).to.be.a("string");
      expect(input.indexOf(output)).to.be.greaterThan(input.findIndex((item) => item.call_id === output.call_id));
    }
    // The same objects, byte for byte: encrypted_content from output_item.done, phase, original argument bytes.
    expect(JSON.stringify([reasoning1, commentary, callA, callB, reasoning2, answer])).to.equal(ORIGINAL);
    expect(input.filter((item) => item.id !== undefined)).to.deep.equal(JSON.parse(ORIGINAL));
    // Other endpoints' state is never turned into a Responses item or field.
    expect(input.filter((item) => item.type === "reasoning").map((item) => item.id)).to.deep.equal(["rs_1", "rs_2"]);
    expect(JSON.stringify(input))
      .to.not.include("raw chat thinking")
      .and.not.include("claude thinking")
      .and.not.include("sig");
  });

  it("never projects an unsettled round: its calls and replay items stay out until every result is in", () => {
    const pending: CanonicalMessage[] = [
      user("go"),
      {
        role: "assistant",
        text: "",
        replay: { provider: "openai-responses", items: [reasoning1, callA, callB] },
        toolRoundId: "r",
        toolCalls: [
          { id: "call_a", name: "Read", argumentsJson: '{"path":"a.ts"}', index: 0 },
          { id: "call_b", name: "Grep", argumentsJson: '{"pattern":"TODO"}', index: 1 },
        ],
      },
      result("call_b", "Grep", "only one"),
    ];
    expect(projectResponsesRequest(requestFor(pending)).input).to.deep.equal([{ role: "user", content: "go" }]);
  });

  it("extends request N with request N+1 as the conversation grows, and repeats equal requests byte for byte", async () => {
    const full = history();
    // Every point at which the loop calls the model: after each user message and after each settled round.
    const callPoints = [2, 5, 7, 9, 11];
    const bodies: ResponsesRequest[] = [];
    for (const end of callPoints)
      bodies.push(JSON.parse((await send(requestFor(full.slice(0, end)))).body) as ResponsesRequest);
    for (let n = 1; n < bodies.length; n++) {
      const [before, after] = [bodies[n - 1]!, bodies[n]!];
      expect(JSON.stringify(after.input.slice(0, before.input.length))).to.equal(JSON.stringify(before.input));
      expect(after.input.length).to.be.greaterThan(before.input.length);
      expect(JSON.stringify({ ...after, input: [] })).to.equal(JSON.stringify({ ...before, input: [] }));
    }
    const again = await send(requestFor(full));
    expect(again.body).to.equal((await send(requestFor(full))).body);
  });

  it("omits tools and the token limit when the request has none, and leaves out an empty assistant text", () => {
    const body = projectResponsesRequest({
      model: "m",
      system: "s",
      tools: [],
      messages: [
        { role: "assistant", text: "", toolCalls: [{ id: "c", name: "Ls", argumentsJson: "{}" }] },
        { role: "tool", toolCallId: "c", content: "" },
      ],
    });
    expect(body).to.deep.equal({
      model: "m",
      instructions: "s",
      input: [
        { type: "function_call", call_id: "c", name: "Ls", arguments: "{}" },
        { type: "function_call_output", call_id: "c", output: "" },
      ],
      include: ["reasoning.encrypted_content"],
      store: false,
      stream: true,
    });
  });

  it("asks for reasoning with summaries only when the request carries an effort", () => {
    const request = { model: "m", system: "s", tools: [], messages: [{ role: "user" as const, content: "hi" }] };
    expect(projectResponsesRequest({ ...request, reasoningEffort: "high" }).reasoning).to.deep.equal({
      effort: "high",
      summary: "auto",
    });
    expect(projectResponsesRequest(request)).not.to.have.property("reasoning");
  });

  it("refuses replay items whose calls disagree with the assistant's calls, before any HTTP request", async () => {
    const before = server.requests.length;
    const adapter = createOpenAIResponsesAdapter({ kind: "openai-responses", baseUrl: server.baseUrl, apiKey: KEY });
    const { error } = await drain(adapter, {
      model: "m",
      system: "s",
      tools: [],
      messages: [
        {
          role: "assistant",
          text: "",
          replay: { provider: "openai-responses", items: [reasoning1, callA] },
          toolCalls: [{ id: "call_z", name: "Read", argumentsJson: "{}" }],
        },
        { role: "tool", toolCallId: "call_z", content: "z" },
      ],
    });
    expect(error?.message).to.equal(
      'openai-responses replay state holds calls ["call_a"] but the assistant message has ["call_z"]',
    );
    expect(server.requests.length).to.equal(before);
  });
});
