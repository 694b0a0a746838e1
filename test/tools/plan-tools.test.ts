// The plan-mode interaction tools' drivers: CreatePlan and SwitchMode (docs/protocol/cursor-tools.md §5.10, §6.5).
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import {
  CreatePlanRequestResponseSchema,
  type InteractionResponse,
  InteractionQuerySchema,
  SwitchModeRequestResponseSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { createPlanDriver } from "../../cursor/tools/create-plan.js";
import { switchModeDriver } from "../../cursor/tools/switch-mode.js";
import type { DriverStep } from "../../cursor/tools/types.js";
import { branch, completionOf, ctx, invocation, protocolErrorOf, startedCall } from "./helpers.js";

const agentCtx = { ...ctx, mode: "agent" as const };

/** A query step after a wire round trip of its InteractionQuery (proves it encodes). */
function queryOf<S>(step: DriverStep<S>) {
  if (step.kind !== "query") expect.fail(`expected a query step, got ${step.kind}`);
  const bytes = toBinary(InteractionQuerySchema, create(InteractionQuerySchema, { id: 1, query: step.query }));
  return { query: fromBinary(InteractionQuerySchema, bytes).query, state: step.state };
}

describe("CreatePlan driver", () => {
  const args = {
    name: "Cache the parser",
    overview: "Parse each file once.",
    plan: "1. Add a cache.\n2. Use it.",
    todos: [{ id: "a", content: "Add a cache" }],
  };
  const call = invocation("CreatePlan", args);
  const saved = (planUri: string, result: InteractionResponse["result"] | undefined = undefined) =>
    result ??
    ({
      case: "createPlanRequestResponse",
      value: create(CreatePlanRequestResponseSchema, { result: { planUri, result: { case: "success", value: {} } } }),
    } as InteractionResponse["result"]);

  it("sends create_plan_request_query with the typed args and the call id", () => {
    const { query } = queryOf(createPlanDriver.begin(call, agentCtx));
    if (query.case !== "createPlanRequestQuery") expect.fail(`got ${query.case}`);
    expect(query.value.toolCallId).to.equal(call.callId);
    expect(query.value.args?.name).to.equal("Cache the parser");
    expect(query.value.args?.todos.map((t) => [t.id, t.content])).to.deep.equal([["a", "Add a cache"]]);
  });

  it("a saved plan is a success whose first line names the plan's URI", () => {
    const { state } = queryOf(createPlanDriver.begin(call, agentCtx));
    const done = completionOf(createPlanDriver.onInteractionResponse!(call, state, saved("file:///p/plan.md")));
    expect(done.isError).to.equal(false);
    expect(done.content.split("\n")[0]).to.equal("Plan saved: file:///p/plan.md");
    const card = branch(done.toolCall, "createPlanToolCall");
    expect(card.result?.planUri).to.equal("file:///p/plan.md");
    expect(card.args?.plan).to.equal(args.plan);
  });

  it("an error answer is an error result the model reads", () => {
    const { state } = queryOf(createPlanDriver.begin(call, agentCtx));
    const answer = {
      case: "createPlanRequestResponse",
      value: create(CreatePlanRequestResponseSchema, {
        result: { result: { case: "error", value: { error: "disk full" } } },
      }),
    } as InteractionResponse["result"];
    const done = completionOf(createPlanDriver.onInteractionResponse!(call, state, answer));
    expect(done).to.deep.include({ content: "The plan could not be saved: disk full", isError: true });
  });

  it("an answer of another kind, or without a result, is a protocol error", () => {
    const { state } = queryOf(createPlanDriver.begin(call, agentCtx));
    const other = {
      case: "switchModeRequestResponse",
      value: create(SwitchModeRequestResponseSchema, { result: { case: "approved", value: {} } }),
    } as InteractionResponse["result"];
    expect(protocolErrorOf(createPlanDriver.onInteractionResponse!(call, state, other))).to.include(
      "expected create_plan_request_response, got switch_mode_request_response",
    );
    const empty = {
      case: "createPlanRequestResponse",
      value: create(CreatePlanRequestResponseSchema, {}),
    } as InteractionResponse["result"];
    expect(protocolErrorOf(createPlanDriver.onInteractionResponse!(call, state, empty))).to.include("no result set");
  });

  it("todos without an id are invalid arguments, not a protocol error", () => {
    const bad = createPlanDriver.started(invocation("CreatePlan", { plan: "x", todos: [{ content: "c" }] }), agentCtx);
    expect(bad).to.deep.equal({ invalid: 'Invalid arguments for CreatePlan: todos[0]: "id" is required.' });
  });
});

describe("SwitchMode driver", () => {
  const call = invocation("SwitchMode", { target_mode_id: "plan", explanation: "Plan first." });
  const response = (result: MessageInitShape<typeof SwitchModeRequestResponseSchema>["result"]) =>
    ({
      case: "switchModeRequestResponse",
      value: create(SwitchModeRequestResponseSchema, { result }),
    }) as InteractionResponse["result"];

  it("asks with switch_mode_request_query; the call id rides in its args", () => {
    const card = startedCall(switchModeDriver.started(call, agentCtx));
    expect(branch(card, "switchModeToolCall").args?.targetModeId).to.equal("plan");
    const { query } = queryOf(switchModeDriver.begin(call, agentCtx));
    if (query.case !== "switchModeRequestQuery") expect.fail(`got ${query.case}`);
    expect(query.value.args?.toolCallId).to.equal(call.callId);
    expect(query.value.args?.explanation).to.equal("Plan first.");
  });

  it("an approval completes with success{from, to} and switches the run's mode", () => {
    const { state } = queryOf(switchModeDriver.begin(call, agentCtx));
    const done = completionOf(
      switchModeDriver.onInteractionResponse!(call, state, response({ case: "approved", value: {} })),
    );
    expect(done.isError).to.equal(false);
    expect(done.switchMode).to.equal("plan");
    const result = branch(done.toolCall, "switchModeToolCall").result?.result;
    expect(result).to.deep.include({ case: "success" });
    expect(result?.value).to.deep.include({ fromModeId: "agent", toModeId: "plan" });
  });

  it("a rejection completes with the user's reason as an error and switches nothing", () => {
    const { state } = queryOf(switchModeDriver.begin(call, agentCtx));
    const rejected = response({ case: "rejected", value: { reason: "just do it" } });
    const done = completionOf(switchModeDriver.onInteractionResponse!(call, state, rejected));
    expect(done).to.deep.include({
      content: "The user declined to switch to plan mode: just do it Stay in agent mode.",
      isError: true,
    });
    expect(done.switchMode).to.equal(undefined);
    expect(branch(done.toolCall, "switchModeToolCall").result?.result.case).to.equal("rejected");
  });

  it("an answer that picks neither branch is a protocol error, not a rejection", () => {
    const { state } = queryOf(switchModeDriver.begin(call, agentCtx));
    expect(
      protocolErrorOf(switchModeDriver.onInteractionResponse!(call, state, response({ case: undefined }))),
    ).to.include("neither approved nor rejected");
  });

  it("refuses an unknown mode or the current one as invalid arguments", () => {
    const unknown = switchModeDriver.started(invocation("SwitchMode", { target_mode_id: "triage" }), agentCtx);
    expect(unknown).to.deep.equal({
      invalid:
        'Invalid arguments for SwitchMode: "target_mode_id" must be one of agent, ask, plan, debug, multitask, got "triage".',
    });
    const same = switchModeDriver.started(invocation("SwitchMode", { target_mode_id: "agent" }), agentCtx);
    expect(same).to.deep.equal({
      invalid: "Invalid arguments for SwitchMode: the conversation is already in agent mode.",
    });
  });
});
