// Wire-level e2e: Plan mode's CreatePlan flow, the plan kept in the checkpoint as a fold of history (surviving a
// gateway restart), and the start_plan / execute_plan actions (docs/protocol/cursor-run.md §8.9, §8.11;
// docs/protocol/cursor-tools.md §5.10).
import { clone, create, fromBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AgentMode,
  ConversationPlanSchema,
  ConversationStateStructureSchema,
  CreatePlanRequestResponseSchema,
  ExecutePlanActionSchema,
  type InteractionResponse,
  StartPlanActionSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { offeredTools } from "../../cursor/tools/mode-tools.js";
import { loadPromptAssets, type ModeId } from "../../prompt/assets.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { offeredNames, planSaved } from "../support/modes-client.js";
import { blobHex } from "../support/observed-frames.js";
import { assertCleanSuccess, assertPrefix, MODEL, SETTLED_ROUND_THEN_ANSWER, useToolsRig } from "./tools-kit.js";

const assets = loadPromptAssets();
const offered = (mode: ModeId) => offeredTools(mode, assets.modes.get(mode)!.tools).map((t) => t.name);
const PLAN = { name: "Cache the parser", overview: "Parse once.", plan: "1. Add a cache.\n2. Use it in load()." };
const PLAN_URI = "file:///workspace/.cursor/plans/cache-the-parser.plan.md";

/** The plan the checkpoint points at, read from the client's blob store. */
function checkpointPlan(client: CursorClient, state: { plan?: Uint8Array }): string | undefined {
  if (!state.plan) return undefined;
  const bytes = client.blobs.get(blobHex(state.plan));
  if (!bytes) expect.fail("the checkpoint's plan blob was never SET to the client");
  return fromBinary(ConversationPlanSchema, bytes).plan;
}

describe("e2e plans: CreatePlan in plan mode", function () {
  this.timeout(20_000);
  const rig = useToolsRig("plans");

  it("asks the client to save the plan, gives the model its URI and keeps the plan in the checkpoint", async () => {
    const fake = await rig.fake(
      { text: "Here is the plan.", toolCalls: [{ id: "call_plan_1", name: "CreatePlan", args: PLAN }] },
      { text: "The plan is ready for review." },
    );
    const { client, run } = rig.start(fake, {
      text: "plan a parser cache",
      mode: AgentMode.PLAN,
      hooks: { onInteraction: () => planSaved(PLAN_URI) },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    expect(run.kinds()).to.deep.equal([
      "text_delta",
      "partial_tool_call",
      "partial_tool_call",
      "token_delta",
      ...Array<string>(5).fill("kv_set"),
      "checkpoint",
      "tool_call_started",
      "query:create_plan_request_query",
      "tool_call_completed",
      // the settled checkpoint also SETs the plan's blob
      "kv_set",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(String((added[1] as { content: string }).content).split("\n")[0]).to.equal(`Plan saved: ${PLAN_URI}`);
    const last = run.lastCheckpoint()!;
    expect(checkpointPlan(client, last)).to.equal(PLAN.plan);
    expect(Object.keys(last.plans)).to.deep.equal(["call_plan_1"]);
    expect(last.plans.call_plan_1).to.deep.include({ id: "call_plan_1", path: PLAN_URI });
    // The staged checkpoint came before the result: no plan yet.
    expect(run.checkpoints[0]!.plan).to.equal(undefined);
  });

  it("a plan the client could not save is an error result, and the checkpoint gets no plan", async () => {
    const fake = await rig.fake(
      { text: "Here is the plan.", toolCalls: [{ id: "call_plan_2", name: "CreatePlan", args: PLAN }] },
      { text: "Saving failed." },
    );
    const error: InteractionResponse["result"] = {
      case: "createPlanRequestResponse",
      value: create(CreatePlanRequestResponseSchema, {
        result: { result: { case: "error", value: { error: "read-only folder" } } },
      }),
    };
    const { client, run } = rig.start(fake, {
      text: "plan a parser cache",
      mode: AgentMode.PLAN,
      hooks: { onInteraction: () => error },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    assertCleanSuccess(run, client);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ role: "tool", content: "The plan could not be saved: read-only folder" });
    expect(run.lastCheckpoint()!.plan).to.equal(undefined);
    expect(run.lastCheckpoint()!.plans).to.deep.equal({});
  });

  it("a cancel while the plan is with the user ends the run canceled, with nothing left waiting", async () => {
    const fake = await rig.fake({
      text: "Here is the plan.",
      toolCalls: [{ id: "call_plan_3", name: "CreatePlan", args: PLAN }],
    });
    const { run } = rig.start(fake, {
      text: "plan a parser cache",
      mode: AgentMode.PLAN,
      hooks: {
        onInteraction: (_query, ctx) => {
          void ctx.run.cancel("user pressed stop");
          return undefined;
        },
      },
    });
    expect(await run.done).to.deep.include({ ok: false, code: "canceled" });
    expect(run.kinds().slice(-3)).to.deep.equal([
      "tool_call_started",
      "query:create_plan_request_query",
      "end:canceled",
    ]);
    expect(run.aborts).to.deep.equal([]);
    expect(fake.requests).to.have.length(1);
  });

  it("start_plan_action opens a turn in plan mode whatever the message's own mode", async () => {
    const fake = await rig.fake({ text: "Let me plan." });
    const { client, run } = rig.start(fake, {
      text: "plan it",
      customize(request) {
        const action = request.action!.action;
        if (action.case !== "userMessageAction") expect.fail("expected a user message to move");
        const { userMessage, requestContext } = action.value;
        const value = create(StartPlanActionSchema, { userMessage, requestContext, isSpec: false });
        request.action!.action = { case: "startPlanAction", value };
      },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    assertCleanSuccess(run, client);
    expect(offeredNames(fake.requests[0]!)).to.deep.equal(offered("plan"));
    expect(run.lastCheckpoint()!.mode).to.equal(AgentMode.PLAN);
  });

  it("execute_plan_action runs the plan in its execution mode, the plan in the runtime message", async () => {
    const fake = await rig.fake({ text: "Executing." });
    const { client, run } = rig.start(fake, {
      text: "",
      customize(request) {
        const value = create(ExecutePlanActionSchema, {
          planFileContent: PLAN.plan,
          planFilePath: "/workspace/.cursor/plans/cache-the-parser.plan.md",
          planId: "call_plan_1",
          executionMode: AgentMode.AGENT,
        });
        request.action!.action = { case: "executePlanAction", value };
      },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    assertCleanSuccess(run, client);
    const [request] = fake.requests;
    expect(offeredNames(request!)).to.deep.equal(offered("agent"));
    const runtime = String((request!.body.messages as Array<{ content: string }>)[1]!.content);
    expect(runtime).to.include(
      `<plan_to_execute id="call_plan_1" path="/workspace/.cursor/plans/cache-the-parser.plan.md">\n${PLAN.plan}\n</plan_to_execute>`,
    );
    expect(runtime).to.include("<user_query>\nCarry out the plan above");
  });

  it("execute_plan_action without any plan text is refused with invalid_argument", async () => {
    const fake = await rig.fake();
    const { run } = rig.start(fake, {
      text: "",
      customize(request) {
        const value = create(ExecutePlanActionSchema, { executionMode: AgentMode.AGENT });
        request.action!.action = { case: "executePlanAction", value };
      },
    });
    expect(await run.done).to.deep.include({
      ok: false,
      code: "invalid_argument",
      message: "execute_plan_action carries no plan to execute",
    });
    expect(fake.requests).to.have.length(0);
  });
});

describe("e2e plans: the plan survives a gateway restart", function () {
  this.timeout(60_000);
  let fake: FakeOpenAI;
  let dataDir: string;
  before(async () => {
    fake = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-plans-restart-"));
  });
  after(async () => {
    await killAllGateways();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  const credentials = () => ({ apiKey: "sk-e2e-plans", baseUrl: fake.baseUrl });

  it("is derived again from the stored history when the client's checkpoint has lost it", async () => {
    const conversationId = `plans-restart-${process.pid}`;
    const gw1 = await startGatewayProcess({ dataDir, config: { models: [] } });
    const client1 = new CursorClient(gw1.url, { hooks: { onInteraction: () => planSaved(PLAN_URI) } });
    fake.enqueue(
      { text: "Plan:", toolCalls: [{ id: "call_plan_r", name: "CreatePlan", args: PLAN }] },
      { text: "Ready for review." },
    );
    const run1 = client1.startRun({
      conversationId,
      modelId: MODEL,
      text: "plan it",
      mode: AgentMode.PLAN,
      credentials: credentials(),
    });
    expect(await run1.done).to.deep.equal({ ok: true });
    expect(checkpointPlan(client1, run1.lastCheckpoint()!)).to.equal(PLAN.plan);
    await gw1.stop("SIGKILL");

    // The editor comes back with a checkpoint whose plan fields are gone: only the history can say what the plan is.
    const checkpoint = clone(ConversationStateStructureSchema, run1.lastCheckpoint()!);
    checkpoint.plan = undefined;
    checkpoint.plans = {};
    const gw2 = await startGatewayProcess({ dataDir, config: { models: [] } });
    const client2 = new CursorClient(gw2.url);
    for (const data of client1.blobs.values()) client2.putBlob(data);
    fake.enqueue({ text: "Go ahead when you like." });
    const run2 = client2.startRun({
      conversationId,
      modelId: MODEL,
      text: "looks good",
      mode: AgentMode.PLAN,
      credentials: credentials(),
      checkpoint,
    });
    expect(await run2.done).to.deep.equal({ ok: true });
    const last = run2.lastCheckpoint()!;
    expect(checkpointPlan(client2, last)).to.equal(PLAN.plan);
    expect(last.plans.call_plan_r).to.deep.include({ id: "call_plan_r", path: PLAN_URI });
    await gw2.stop();
  });
});
