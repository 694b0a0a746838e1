// The mapper on frames the recordings do not contain: withdrawn prompts, requests this host cannot serve, questions,
// elicitations, subagent traffic, injected inputs and the result outcomes.
import { expect } from "chai";
import type { StdinFrame, StdoutFrame } from "../../workers/claude-code/frames.js";
import { ClaudeCodeMapper } from "../../workers/claude-code/mapper.js";
import { outcomeOf } from "../../workers/claude-code/result.js";
import type { WorkerEvent } from "../../workers/types.js";

function mapperRig() {
  const events: WorkerEvent[] = [];
  const replies: StdinFrame[] = [];
  const responses: unknown[] = [];
  const mapper = new ClaudeCodeMapper({
    event: (e) => void events.push(e),
    reply: (f) => void replies.push(f),
    controlResponse: (f) => void responses.push(f),
    abandon: () => void events.push({ type: "step", name: "abandoned" }),
  });
  const feed = (...frames: StdoutFrame[]) => {
    for (const f of frames) mapper.handle(f);
  };
  return { mapper, events, replies, responses, feed };
}

const canUseTool = (requestId: string, request: Record<string, unknown>): StdoutFrame => ({
  type: "control_request",
  request_id: requestId,
  request: { subtype: "can_use_tool", ...request },
});

const question = {
  questions: [
    { question: "Which color?", header: "Color", options: [{ label: "Red" }, { label: "Blue" }], multiSelect: false },
  ],
};

describe("claude-code mapper", () => {
  it("control_cancel_request withdraws an open prompt once; a later answer writes nothing", () => {
    const r = mapperRig();
    r.feed(canUseTool("req-1", { tool_name: "Bash", input: { command: "ls" }, tool_use_id: "toolu_1" }));
    r.feed(
      { type: "control_cancel_request", request_id: "req-1" },
      { type: "control_cancel_request", request_id: "req-1" },
    );
    expect(r.events.map((e) => e.type)).to.deep.equal(["interaction.requested", "interaction.withdrawn"]);
    expect(r.mapper.interactions.answer("req-1", { kind: "permission", allowed: true })).to.equal(undefined);
  });

  it("AskUserQuestion is a question; its answer goes back as updatedInput with the answers", () => {
    const r = mapperRig();
    r.feed(canUseTool("q-1", { tool_name: "AskUserQuestion", input: question, tool_use_id: "toolu_q" }));
    expect(r.events).to.deep.equal([
      {
        type: "interaction.requested",
        id: "q-1",
        kind: "question",
        payload: { tool_name: "AskUserQuestion", questions: question.questions, tool_use_id: "toolu_q" },
      },
    ]);
    expect(
      r.mapper.interactions.answer("q-1", { kind: "question", answers: { "Which color?": "Blue" } }),
    ).to.deep.equal({
      type: "control_response",
      response: {
        subtype: "success",
        request_id: "q-1",
        response: { behavior: "allow", updatedInput: { ...question, answers: { "Which color?": "Blue" } } },
      },
    });
  });

  it("a denial (e.g. the 5-minute auto-deny) fits any prompt; an answer of another kind is a denial, never an allow", () => {
    const r = mapperRig();
    r.feed(
      canUseTool("q-1", { tool_name: "AskUserQuestion", input: question }),
      canUseTool("p-1", { tool_name: "Write", input: { file_path: "x" } }),
    );
    expect(r.mapper.interactions.answer("q-1", { kind: "permission", allowed: false })).to.have.nested.property(
      "response.response.behavior",
      "deny",
    );
    const mismatch = r.mapper.interactions.answer("p-1", { kind: "question", answers: {} });
    expect(mismatch).to.have.nested.property("response.response.behavior", "deny");
  });

  it("an elicitation is an interaction answered with {action, content}", () => {
    const r = mapperRig();
    r.feed({
      type: "control_request",
      request_id: "e-1",
      request: {
        subtype: "elicitation",
        mcp_server_name: "srv",
        message: "Your name?",
        requested_schema: { type: "object" },
      },
    });
    expect(r.events).to.deep.equal([
      {
        type: "interaction.requested",
        id: "e-1",
        kind: "elicitation",
        payload: { mcp_server_name: "srv", message: "Your name?", requested_schema: { type: "object" } },
      },
    ]);
    expect(
      r.mapper.interactions.answer("e-1", { kind: "elicitation", action: "accept", content: { name: "Ada" } }),
    ).to.deep.equal({
      type: "control_response",
      response: { subtype: "success", request_id: "e-1", response: { action: "accept", content: { name: "Ada" } } },
    });
  });

  it("requests this host cannot serve are answered at once (an error, or a deny when unreadable), never left hanging", () => {
    const r = mapperRig();
    r.feed({ type: "control_request", request_id: "h-1", request: { subtype: "hook_callback", callback_id: "x" } });
    r.feed(canUseTool("p-1", { input: {} }));
    expect(r.events).to.deep.equal([]);
    expect(r.replies).to.deep.equal([
      {
        type: "control_response",
        response: { subtype: "error", request_id: "h-1", error: "Unsupported control request subtype: hook_callback" },
      },
      {
        type: "control_response",
        response: {
          subtype: "success",
          request_id: "p-1",
          response: { behavior: "deny", message: "Unreadable permission request." },
        },
      },
    ]);
  });

  it("control responses go to the control channel; keep_alive is ignored; unknown frames are raw", () => {
    const r = mapperRig();
    const response = {
      type: "control_response",
      response: { subtype: "success", request_id: "interrupt_1", response: {} },
    };
    r.feed(response, { type: "keep_alive" }, { type: "rate_limit_event", info: {} });
    expect(r.responses).to.deep.equal([response]);
    expect(r.events).to.deep.equal([{ type: "raw", frame: { type: "rate_limit_event", info: {} } }]);
  });

  it("subagent traffic (parent_tool_use_id set) is raw, not the main answer's text", () => {
    const r = mapperRig();
    r.feed({
      type: "assistant",
      parent_tool_use_id: "toolu_task",
      message: { id: "msg_sub", content: [{ type: "text", text: "sub" }] },
    });
    expect(r.events.map((e) => e.type)).to.deep.equal(["raw"]);
  });

  it("an input started while a turn runs is injected, not a new turn", () => {
    const r = mapperRig();
    r.mapper.registerInput("a", "11111111-1111-4111-8111-111111111111");
    r.mapper.registerInput("b", "22222222-2222-4222-8222-222222222222");
    const lifecycle = (uuid: string, state: string): StdoutFrame => ({
      type: "command_lifecycle",
      command_uuid: uuid,
      state,
    });
    r.feed(
      lifecycle("11111111-1111-4111-8111-111111111111", "started"),
      lifecycle("22222222-2222-4222-8222-222222222222", "started"),
    );
    r.feed(
      lifecycle("22222222-2222-4222-8222-222222222222", "completed"),
      lifecycle("33333333-3333-4333-8333-333333333333", "started"),
    );
    expect(r.events).to.deep.equal([
      { type: "turn.started", inputId: "a" },
      { type: "input.started", inputId: "a", mode: "turn" },
      { type: "input.started", inputId: "b", mode: "injected" },
      { type: "input.completed", inputId: "b" },
      { type: "raw", frame: lifecycle("33333333-3333-4333-8333-333333333333", "started") },
    ]);
  });

  it("result closes blocks and prompts left open (a stream cut short) before turn.finished", () => {
    const r = mapperRig();
    r.feed(
      { type: "system", subtype: "init", session_id: "s" },
      {
        type: "stream_event",
        api_message_id: "m",
        event: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      },
      {
        type: "stream_event",
        api_message_id: "m",
        event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "half" } },
      },
      canUseTool("p-1", { tool_name: "Bash", input: {} }),
      {
        type: "result",
        subtype: "error_during_execution",
        is_error: true,
        terminal_reason: "aborted_tools",
        errors: ["x"],
      },
    );
    expect(r.events.slice(-3)).to.deep.equal([
      { type: "text.completed", blockId: "m:0", text: "half" },
      { type: "interaction.withdrawn", id: "p-1" },
      { type: "turn.finished", outcome: "stopped", usage: {}, message: "x", errorCode: "aborted_tools" },
    ]);
  });

  it("a block whose stream broke is completed as abandoned when the CLI's own message_stop names it (2.1.328)", () => {
    const r = mapperRig();
    const stream = (event: Record<string, unknown>, extra: Record<string, unknown> = {}): StdoutFrame => ({
      type: "stream_event",
      api_message_id: "m1",
      event,
      ...extra,
    });
    r.feed(
      stream({ type: "message_start", message: { id: "m1" } }),
      stream({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      stream({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ab" } }),
      stream({ type: "content_block_stop", index: 0 }),
      stream({ type: "message_stop" }, { abandoned_blocks: { api_message_id: "m1", from_block_index: 0 } }),
      { type: "assistant", message: { id: "m2", content: [{ type: "text", text: "fallback" }] } },
    );
    expect(r.events.filter((e) => e.type !== "text.delta")).to.deep.equal([
      { type: "text.completed", blockId: "m1:0", text: "ab", abandoned: true },
      { type: "text.completed", blockId: "m2:0", text: "fallback" },
    ]);
  });

  it("a refused key (api_retry 401) or 'Not logged in' ends the turn at once with CONFIG_INVALID naming the variable", () => {
    const retry = mapperRig();
    retry.feed({ type: "system", subtype: "api_retry", attempt: 1, error_status: 401, error: "authentication_failed" });
    const finished = retry.events.find((e) => e.type === "turn.finished");
    expect(finished).to.deep.include({ outcome: "failed", errorCode: "CONFIG_INVALID" });
    expect((finished as { message: string }).message).to.match(/HTTP 401.*ANTHROPIC_API_KEY.*apiKeyEnv/);
    expect(retry.events.at(-1), "the process is given up").to.deep.equal({ type: "step", name: "abandoned" });

    const none = mapperRig();
    none.feed({
      type: "assistant",
      message: { content: [{ type: "text", text: "Not logged in · Please run /login" }] },
      is_api_error_message: true,
      error: "authentication_failed",
    });
    expect(none.events.find((e) => e.type === "turn.finished")).to.deep.include({ errorCode: "CONFIG_INVALID" });
    expect(none.events.some((e) => e.type === "text.delta" || e.type === "turn.error")).to.equal(false);

    const other = mapperRig();
    other.feed({ type: "system", subtype: "api_retry", attempt: 1, error_status: 529, error: "overloaded" });
    expect(other.events.map((e) => e.type)).to.deep.equal(["step"]);
  });

  it("maps result outcomes by is_error and terminal_reason, never by subtype alone", () => {
    expect(outcomeOf({ type: "result", subtype: "success", is_error: false })).to.equal("completed");
    expect(outcomeOf({ type: "result", subtype: "success", is_error: true, terminal_reason: "api_error" })).to.equal(
      "api_error",
    );
    expect(
      outcomeOf({
        type: "result",
        subtype: "error_during_execution",
        is_error: true,
        terminal_reason: "aborted_streaming",
      }),
    ).to.equal("stopped");
    expect(
      outcomeOf({ type: "result", subtype: "error_max_turns", is_error: true, terminal_reason: "max_turns" }),
    ).to.equal("limit");
    expect(outcomeOf({ type: "result", subtype: "error_max_budget_usd", is_error: true })).to.equal("limit");
    expect(outcomeOf({ type: "result", subtype: "success", is_error: true })).to.equal("failed");
    expect(
      outcomeOf({ type: "result", subtype: "error_during_execution", is_error: true, terminal_reason: "model_error" }),
    ).to.equal("failed");
  });
});
