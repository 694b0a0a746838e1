// Subagents over the wire (docs/protocol/cursor-run.md §13, docs/protocol/cursor-tools.md §5.11, §6.3): a parent
// turn starts one foreground and two background children, each its own request linked by the parent headers and
// doing a tool round; background completions come back as parent runs, one of them retried.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { SubagentModelOverrideSchema, type SubagentArgs } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecPlan, RunHandle, RunHooks } from "../support/cursor-client.js";
import { postBidiAppend } from "../support/connect-wire.js";
import { driveRun, runClient, runRequest } from "../support/run-client.js";
import type { FakeOpenAI, RecordedChatRequest } from "../support/fake-openai.js";
import {
  type ChildScript,
  progressOf,
  startCancelSubagentRun,
  startCompletionRun,
  subagentHooks,
} from "../support/subagent-client.js";
import { waitUntil } from "../support/util.js";
import { assertCleanSuccess, execs, MODEL, TURN_ENDINGS, useToolsRig } from "./tools-kit.js";

/** How long a step may take on a loaded machine (several children, each its own request, run at once). */
const SLOW = 30_000;

/** The subagent tool set: the captured subagent list (docs/protocol/cursor-tools.md §6.3) with UpdateCurrentStep. */
const SUBAGENT_TOOLS = (
  "Shell Grep Delete WebSearch WebFetch GenerateImage ReadLints EditNotebook TodoWrite StrReplace Write Read Glob " +
  "GetMcpTools FetchMcpResource SwitchMode UpdateCurrentStep CallMcpTool Task"
).split(" ");

/** The tool names a provider request offered. */
const toolNames = (r: RecordedChatRequest): string[] =>
  (r.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
const userTexts = (r: RecordedChatRequest): string[] =>
  (r.body.messages as Array<{ role: string; content: unknown }>)
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
const toolResults = (r: RecordedChatRequest): Map<string, string> =>
  new Map(
    (r.body.messages as Array<{ role: string; tool_call_id?: string; content: string }>)
      .filter((m) => m.role === "tool")
      .map((m) => [m.tool_call_id!, m.content]),
  );

/**
 * A child's provider script: a Glob round that reports its step (held until `release`), a round that reports the
 * last step with its summary, then its report.
 */
function childFake(fake: FakeOpenAI, report: string, release: Promise<unknown>): void {
  const step = (args: object) => ({ id: "child_step", name: "UpdateCurrentStep", args });
  fake.enqueue(
    {
      toolCalls: [
        { id: "child_glob", name: "Glob", args: { glob_pattern: "*.md" } },
        step({ current_step: "Looking" }),
      ],
      holdUntil: release,
    },
    { toolCalls: [step({ current_step: "Reporting", final_summary: report, completed_subtitle: "Reported" })] },
    { text: report },
  );
}

/** A finished child's progress: the Glob round's step (Glob 1, the step 2), then the last one after both (3). */
const finished = (report: string) => [
  [
    ["Looking", 2],
    ["Reporting", 3],
  ],
  report,
  "Reported",
];

function assertThreeEndings(run: RunHandle): void {
  expect(run.kinds().slice(-5), run.requestId).to.deep.equal(TURN_ENDINGS);
}

describe("subagents (Task → child runs)", function () {
  this.timeout(90_000);
  const rig = useToolsRig("subagents");

  it("starts one foreground and two background children, then appends each completion once", async () => {
    const parentFake = await rig.fake();
    const fakes = [await rig.fake(), await rig.fake(), await rig.fake()];
    const reports = ["The parser lives in src/json.ts.", "Tests are under test/.", "Drafted the section."];
    let allStarted!: () => void;
    const started = new Promise<void>((r) => (allStarted = r));
    // The background children work on once the parent's turn is over, so its checkpoints hold the foreground
    // child's progress alone.
    let parentEnded!: () => void;
    const afterParent = Promise.all([started, new Promise<void>((r) => (parentEnded = r))]);
    for (const [i, f] of fakes.entries()) childFake(f, reports[i]!, i === 0 ? started : afterParent);
    parentFake.enqueue(
      {
        toolCalls: [
          {
            id: "call_fg",
            name: "Task",
            args: { description: "Map the parser", prompt: "Find the parser.", model: "inherit" },
          },
          {
            id: "call_bg1",
            name: "Task",
            args: {
              description: "Explore tests",
              prompt: "List the tests.",
              subagent_type: "explore",
              run_in_background: true,
            },
          },
          {
            id: "call_bg2",
            name: "Task",
            args: {
              description: "Write docs",
              prompt: "Draft the README section.",
              subagent_type: "Doc-Writer",
              model: "docs-model",
              run_in_background: true,
            },
          },
        ],
      },
      { text: "Three subagents are on it." },
    );
    let family!: ReturnType<typeof subagentHooks>;
    const hooks: RunHooks = { onExec: (exec, ctx) => family.hooks.onExec!(exec, ctx) };
    const conversationId = `subagents-parent-${process.pid}`;
    const { client, run: parent } = rig.start(parentFake, {
      conversationId,
      text: "Start three subagents.",
      hooks,
      customize(request) {
        request.conversationGroupId = "group-1";
        request.subagentModelOverrides = [
          create(SubagentModelOverrideSchema, {
            subagentType: "explore",
            selection: { case: "model", value: { modelId: "explore-model" } },
          }),
        ];
      },
    });
    const scripts = new Map<string, ChildScript>([
      ["call_fg", { fake: fakes[0]!, finalMessage: reports[0]! }],
      ["call_bg1", { fake: fakes[1]!, finalMessage: reports[1]! }],
      ["call_bg2", { fake: fakes[2]!, finalMessage: reports[2]! }],
    ]);
    family = subagentHooks(
      client,
      () => parent,
      (args: SubagentArgs) => scripts.get(args.toolCallId)!,
    );

    // All three children are live at once: each holds its first model call until every one has made it.
    await Promise.all(fakes.map((f) => f.waitForRequests(1, SLOW)));
    allStarted();
    void parent.done.then(parentEnded);
    const ends = await Promise.all([parent.done, ...family.children.map((c) => c.run.done)]);
    expect(ends).to.deep.equal([{ ok: true }, { ok: true }, { ok: true }, { ok: true }]);

    // subagent_args: the type as the model named it, the model resolved in the parent, the parent conversations.
    const sent = execs(parent)
      .filter((e) => e.case === "subagentArgs")
      .map((e) => e.value as SubagentArgs);
    expect(sent.map((a) => [a.toolCallId, a.subagentType, a.modelId, a.runInBackground])).to.deep.equal([
      ["call_fg", "generalPurpose", MODEL, false],
      ["call_bg1", "explore", "explore-model", true],
      ["call_bg2", "Doc-Writer", "docs-model", true],
    ]);
    for (const a of sent)
      expect(a).to.include({ parentConversationId: conversationId, rootParentConversationId: "group-1" });

    // Each child ran its own loop on its resolved model, with the subagent tool set and the agent system prompt.
    const parentFirst = parentFake.requests[0]!;
    for (const [i, fake] of fakes.entries()) {
      const first = fake.requests[0]!;
      expect(first.body.model).to.equal(sent[i]!.modelId);
      expect(toolNames(first)).to.deep.equal(SUBAGENT_TOOLS);
      const task = (first.body.tools as Array<{ function: { name: string; parameters: { properties: object } } }>).find(
        (t) => t.function.name === "Task",
      )!;
      expect(Object.keys(task.function.parameters.properties)).to.not.include.members([
        "environment",
        "cloud_base_branch",
      ]);
      expect(first.body.messages[0]).to.deep.equal(parentFirst.body.messages[0]);
      expect(userTexts(first).at(-1)).to.contain("<subagent_role>").and.contain(sent[i]!.prompt);
      expect(fake.requests).to.have.length(3);
    }
    expect(toolNames(parentFirst)).to.include("AskQuestion");

    // The parent's Task results: the foreground child's report; the background children named, nothing more.
    const results = toolResults(parentFake.requests[1]!);
    const [fg, bg1, bg2] = family.children;
    expect(results.get("call_fg")).to.equal(
      `Subagent name: Map the parser\nSubagent ID: ${fg!.agentId}\n\n${reports[0]}`,
    );
    expect(results.get("call_bg1")).to.equal(`Subagent name: Explore tests\nSubagent ID: ${bg1!.agentId}`);
    expect(results.get("call_bg2")).to.equal(`Subagent name: Write docs\nSubagent ID: ${bg2!.agentId}`);
    for (const run of [parent, ...family.children.map((c) => c.run)]) {
      assertCleanSuccess(run, client);
      assertThreeEndings(run);
    }
    // The parent's checkpoints file the foreground child's progress under its Task call from the settled round on,
    // as the child's own checkpoint files it; the background children had none yet.
    const [parentStaged, parentSettled] = parent.checkpoints;
    expect(progressOf(parentStaged!)).to.deep.equal({});
    const fgProgress = { call_fg: finished(reports[0]!) };
    expect(progressOf(parentSettled!)).to.deep.equal(fgProgress);
    expect(progressOf(parent.lastCheckpoint()!)).to.deep.equal(fgProgress);
    for (const child of family.children) {
      expect(progressOf(child.run.lastCheckpoint()!)).to.deep.equal({
        [child.args.toolCallId]: finished(reports[family.children.indexOf(child)]!),
      });
    }

    // Completions: bg1's, the same completion retried on the same checkpoint, then bg2's on the retry's result.
    const completer = await rig.fake(
      { text: "Noted the tests." },
      { text: "Noted the tests." },
      { text: "Noted the docs." },
      { text: "Already noted." },
    );
    const common = { conversationId, modelId: MODEL, fake: completer };
    const first = startCompletionRun(client, {
      ...common,
      checkpoint: parent.lastCheckpoint()!,
      finished: [{ child: bg1!, detail: reports[1]! }],
    });
    expect(await first.done).to.deep.equal({ ok: true });
    const retried = startCompletionRun(client, {
      ...common,
      checkpoint: parent.lastCheckpoint()!,
      finished: [{ child: bg1!, detail: reports[1]! }],
    });
    expect(await retried.done).to.deep.equal({ ok: true });
    const second = startCompletionRun(client, {
      ...common,
      checkpoint: retried.lastCheckpoint()!,
      finished: [{ child: bg2!, detail: reports[2]! }],
    });
    expect(await second.done).to.deep.equal({ ok: true });
    // bg1's completion once more, on a checkpoint that holds it: nothing is appended, the model is still called.
    const again = startCompletionRun(client, {
      ...common,
      checkpoint: second.lastCheckpoint()!,
      finished: [{ child: bg1!, detail: reports[1]! }],
    });
    expect(await again.done).to.deep.equal({ ok: true });
    // These runs build on blobs earlier runs SET, so only the endings and the client's checks apply.
    for (const run of [first, retried, second, again]) assertThreeEndings(run);
    expect(client.violations()).to.deep.equal([]);
    // By then every child had finished: each completion turn files all three children's final progress.
    const allProgress = {
      call_fg: finished(reports[0]!),
      call_bg1: finished(reports[1]!),
      call_bg2: finished(reports[2]!),
    };
    for (const run of [first, retried, second, again])
      expect(progressOf(run.lastCheckpoint()!)).to.deep.equal(allProgress);
    expect(completer.requests).to.have.length(4);
    const [a, b, c, d] = completer.requests;
    expect(d!.body.messages.slice(0, -1)).to.deep.equal(c!.body.messages);
    expect(d!.body.messages.at(-1)).to.deep.include({ role: "assistant", content: "Noted the docs." });
    // The retry replays the stored message byte for byte; the next completion only appends.
    expect(b!.body.messages).to.deep.equal(a!.body.messages);
    expect(JSON.stringify(c!.body.messages.slice(0, b!.body.messages.length))).to.equal(
      JSON.stringify(b!.body.messages),
    );
    const completions = userTexts(c!).filter((t) => t.includes("<subagent_completion>"));
    expect(completions).to.have.length(2);
    expect(completions[0]).to.contain(`Subagent ID: ${bg1!.agentId}`).and.contain(reports[1]);
    expect(completions[1]).to.contain(`Subagent ID: ${bg2!.agentId}`).and.contain(reports[2]);
    for (const t of completions) expect(t).to.contain("Perform any necessary follow-up actions");
    // The turn each completion opens is a simulated user message; the root carries the stable runtime id.
    const roots = second
      .lastCheckpoint()!
      .rootPromptMessagesJson.map((id) => client.blobs.get(Buffer.from(id).toString("hex"))!);
    const ids = roots.map((bytes) => (JSON.parse(Buffer.from(bytes).toString("utf8")) as { id?: string }).id);
    expect(ids.filter((id) => id?.startsWith("runtime:subagent-completed:"))).to.deep.equal([
      `runtime:subagent-completed:${bg1!.agentId}`,
      `runtime:subagent-completed:${bg2!.agentId}`,
    ]);
  });

  it("refuses a parent header that changes on one request and cancels that run", async () => {
    const fake = await rig.fake();
    let release!: () => void;
    fake.enqueue({ text: "never read", holdUntil: new Promise<void>((r) => (release = r)) });
    const headers = { "x-parent-request-id": "parent-1", "x-parent-agent-tool-call-id": "call_a" };
    const { run } = rig.start(fake, { text: "child work", headers });
    await fake.waitForRequests(1, SLOW);
    const refused = await postBidiAppend(rig.gw.url, {
      requestId: run.requestId,
      seqno: 2n,
      message: run.appends[0]!.message,
      headers: { ...headers, "x-parent-agent-tool-call-id": "call_b" },
    });
    expect(refused.error?.code).to.equal("invalid_argument");
    expect(refused.error?.message).to.contain("x-parent-agent-tool-call-id changed");
    const end = await run.done;
    release();
    expect(end).to.include({ ok: false, code: "canceled" });
  });

  it("a canceled parent ends its running foreground children canceled, their Execs aborted", async () => {
    const parentFake = await rig.fake();
    const fakes = [await rig.fake(), await rig.fake()];
    for (const f of fakes) f.enqueue({ toolCalls: [{ id: "child_read", name: "Read", args: { path: "a.md" } }] });
    const silent: RunHooks = { onExec: (): ExecPlan => ({ silent: true }) };
    parentFake.enqueue({
      toolCalls: ["one", "two"].map((n) => ({
        id: `call_${n}`,
        name: "Task",
        args: { description: `Task ${n}`, prompt: `Do ${n}.` },
      })),
    });
    let family!: ReturnType<typeof subagentHooks>;
    const { client, run: parent } = rig.start(parentFake, {
      text: "Two subagents.",
      hooks: { onExec: (exec, ctx) => family.hooks.onExec!(exec, ctx) },
    });
    family = subagentHooks(
      client,
      () => parent,
      (_args, i) => ({ fake: fakes[i]!, finalMessage: "-", hooks: silent }),
    );
    await waitUntil(
      () => family.children.length === 2 && family.children.every((c) => c.run.execLog.length === 1),
      SLOW,
      () => `children: ${family.children.map((c) => c.run.kinds().join(",")).join(" | ")}`,
    );
    await parent.cancel();
    expect(await parent.done).to.include({ ok: false, code: "canceled" });
    for (const child of family.children) {
      expect(await child.run.done).to.include({ ok: false, code: "canceled" });
      expect(child.run.aborts).to.deep.equal([child.run.execLog[0]!.id]);
    }
    expect(parent.aborts).to.have.length(2);
  });

  it("cancel_subagent_action ends that running background child canceled and its own request at once", async () => {
    const parentFake = await rig.fake();
    const childFake = await rig.fake({ toolCalls: [{ id: "child_read", name: "Read", args: { path: "a.md" } }] });
    parentFake.enqueue(
      {
        toolCalls: [
          { id: "call_bg", name: "Task", args: { description: "Slow", prompt: "Take long.", run_in_background: true } },
        ],
      },
      { text: "Started it." },
    );
    let family!: ReturnType<typeof subagentHooks>;
    const conversationId = `subagents-cancel-${process.pid}`;
    const { client, run: parent } = rig.start(parentFake, {
      conversationId,
      text: "One background subagent.",
      hooks: { onExec: (exec, ctx) => family.hooks.onExec!(exec, ctx) },
    });
    const silent: RunHooks = { onExec: (): ExecPlan => ({ silent: true }) };
    family = subagentHooks(
      client,
      () => parent,
      () => ({ fake: childFake, finalMessage: "-", hooks: silent }),
    );
    expect(await parent.done).to.deep.equal({ ok: true });
    const child = family.children[0]!;
    await waitUntil(
      () => child.run.execLog.length === 1,
      SLOW,
      () => child.run.kinds().join(","),
    );
    const cancel = startCancelSubagentRun(client, {
      conversationId,
      modelId: MODEL,
      fake: parentFake,
      subagentId: child.agentId,
    });
    expect(await cancel.done).to.deep.equal({ ok: true });
    expect(await child.run.done).to.include({ ok: false, code: "canceled" });
    expect(child.run.aborts).to.deep.equal([child.run.execLog[0]!.id]);
    expect(parentFake.requests).to.have.length(2);
  });

  it("a child on the HTTP/2 Run stream carries its parent headers once for the call and gets the subagent tools", async () => {
    const fake = await rig.fake({ text: "Mapped." });
    const first = runRequest(MODEL, "Map the parser.");
    const credentials = { case: "apiKeyCredentials" as const, value: { apiKey: "sk-e2e-h2", baseUrl: fake.baseUrl } };
    const init = {
      message: { ...first.message, value: { ...first.message.value, requestedModel: { modelId: MODEL, credentials } } },
    };
    const headers = { "x-parent-request-id": "parent-h2", "x-parent-agent-tool-call-id": "call_h2" };
    const result = await driveRun(runClient(rig.gw.url), [init], { call: { headers } });
    expect(result.error).to.equal(undefined);
    expect(result.kinds.slice(-4)).to.deep.equal(["turnEnded", "checkpoint", "checkpoint", "checkpoint"]);
    expect(toolNames(fake.requests[0]!)).to.deep.equal(SUBAGENT_TOOLS);
  });
});
