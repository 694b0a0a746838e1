// Wire-level e2e: every mode runs a closed-loop turn with its own prompt and tool list on the wire; a tool outside
// the mode's list is refused like an unknown tool; SwitchMode moves the tools of the next model call and the
// checkpoint's mode; the plan actions open turns in their modes (docs/protocol/cursor-tools.md §6,
// docs/protocol/cursor-run.md §8.7, §8.11).
import { expect } from "chai";
import { AgentMode } from "../../proto/gen/agent/v1/agent_pb.js";
import { offeredTools } from "../../cursor/tools/mode-tools.js";
import { loadPromptAssets, type ModeId, USER_MODE_IDS as MODE_IDS, type UserModeId } from "../../prompt/assets.js";
import { createWorkspace } from "../support/client-workspace.js";
import { offeredNames, switchAnswer, systemPrompt } from "../support/modes-client.js";
import { assertCleanSuccess, assertPrefix, SETTLED_ROUND_THEN_ANSWER, useToolsRig } from "./tools-kit.js";

const assets = loadPromptAssets();
const offered = (mode: ModeId) => offeredTools(mode, assets.modes.get(mode)!.tools).map((t) => t.name);
const WIRE: Record<UserModeId, AgentMode> = {
  agent: AgentMode.AGENT,
  ask: AgentMode.ASK,
  plan: AgentMode.PLAN,
  debug: AgentMode.DEBUG,
  multitask: AgentMode.MULTITASK,
};
const files = { "src/app.ts": "export const answer = 42;\n" };

/** A model call that ends in one tool call, then its round up to the call's start. */
const STAGED = [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
  "tool_call_started",
];

describe("e2e modes: each mode's prompt and tools on the wire", function () {
  this.timeout(20_000);
  const rig = useToolsRig("modes");

  for (const mode of MODE_IDS) {
    it(`${mode}: a Read round and an answer, with the ${mode} prompt and tool list in every provider request`, async () => {
      const fake = await rig.fake(
        { text: "Looking.", toolCalls: [{ id: `call_read_${mode}`, name: "Read", args: { path: "src/app.ts" } }] },
        { text: "It exports 42." },
      );
      const { client, run } = rig.start(fake, {
        text: "what does src/app.ts export?",
        mode: WIRE[mode],
        workspace: createWorkspace(files),
      });
      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kinds()).to.deep.equal([
        ...STAGED,
        "exec:read_args",
        "tool_call_completed",
        ...SETTLED_ROUND_THEN_ANSWER,
      ]);
      assertCleanSuccess(run, client);
      expect(fake.requests).to.have.length(2);
      for (const request of fake.requests) {
        expect(offeredNames(request)).to.deep.equal(offered(mode));
        expect(systemPrompt(request)).to.equal(assets.modes.get(mode)!.systemPrompt);
      }
      assertPrefix(fake.requests[0]!, fake.requests[1]!);
      expect(run.lastCheckpoint()!.mode).to.equal(WIRE[mode]);
    });
  }

  for (const [mode, tool, args] of [
    ["ask", "Write", { path: "src/app.ts", contents: "x" }],
    ["plan", "StrReplace", { path: "src/app.ts", old_string: "42", new_string: "43" }],
    ["ask", "CreatePlan", { plan: "x" }],
  ] as const) {
    it(`${mode}: a call of ${tool}, which ${mode} does not offer, is refused like an unknown tool`, async () => {
      const fake = await rig.fake({ text: "On it.", toolCalls: [{ id: "call_out", name: tool, args }] });
      const { client, run } = rig.start(fake, { text: "change it", mode: WIRE[mode] });
      // The same ending as a tool no catalog knows (test/e2e/protocol-errors.test.ts).
      expect(await run.done).to.deep.include({
        ok: false,
        code: "invalid_argument",
        message: `protocol error: model called unknown tool "${tool}"`,
      });
      expect(run.kinds()).to.deep.equal(["text_delta", "end:invalid_argument"]);
      expect(run.execLog).to.deep.equal([]);
      expect(client.workspace.files.size).to.equal(0);
      expect(offeredNames(fake.requests[0]!)).to.not.include(tool);
    });
  }

  it("a mode the gateway has no assets for is refused with failed_precondition", async () => {
    const fake = await rig.fake();
    const { run } = rig.start(fake, { text: "triage this", mode: AgentMode.TRIAGE });
    expect(await run.done).to.deep.include({
      ok: false,
      code: "failed_precondition",
      message: "mode AGENT_MODE_TRIAGE is not served by byok-gateway",
    });
    expect(run.kinds()).to.deep.equal(["end:failed_precondition"]);
    expect(fake.requests).to.have.length(0);
  });
});

describe("e2e modes: SwitchMode", function () {
  this.timeout(20_000);
  const rig = useToolsRig("switch-mode");

  it("an approved switch gives the next model call the new mode's tools and the checkpoint the new mode", async () => {
    const fake = await rig.fake(
      { text: "Plan first.", toolCalls: [{ id: "call_sw", name: "SwitchMode", args: { target_mode_id: "plan" } }] },
      { text: "Now in plan mode." },
    );
    const asked: string[] = [];
    const { client, run } = rig.start(fake, {
      text: "rework the parser",
      hooks: {
        onInteraction(query) {
          asked.push(query.query.case ?? "");
          return switchAnswer();
        },
      },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    expect(run.kinds()).to.deep.equal([
      ...STAGED,
      "query:switch_mode_request_query",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(asked).to.deep.equal(["switchModeRequestQuery"]);
    const [first, second] = fake.requests;
    expect(offeredNames(first!)).to.deep.equal(offered("agent"));
    expect(offeredNames(second!)).to.deep.equal(offered("plan"));
    // The run keeps its system prompt; the history only grows.
    const added = assertPrefix(first!, second!);
    expect(added[1]).to.deep.include({ role: "tool", tool_call_id: "call_sw" });
    expect(String((added[1] as { content: string }).content)).to.include("now in plan mode");
    expect(run.checkpoints.map((c) => c.mode)).to.deep.equal([
      AgentMode.AGENT,
      AgentMode.PLAN,
      AgentMode.PLAN,
      AgentMode.PLAN,
      AgentMode.PLAN,
    ]);
  });

  it("a rejected switch is an error result with the user's reason; tools and mode stay", async () => {
    const fake = await rig.fake(
      { text: "Plan first?", toolCalls: [{ id: "call_sw2", name: "SwitchMode", args: { target_mode_id: "ask" } }] },
      { text: "Staying in agent mode." },
    );
    const { client, run } = rig.start(fake, {
      text: "rework the parser",
      hooks: { onInteraction: () => switchAnswer("keep going") },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    assertCleanSuccess(run, client);
    const [first, second] = fake.requests;
    expect(offeredNames(second!)).to.deep.equal(offeredNames(first!));
    const added = assertPrefix(first!, second!);
    expect(added[1]).to.deep.include({
      role: "tool",
      content: "The user declined to switch to ask mode: keep going Stay in agent mode.",
    });
    expect(run.lastCheckpoint()!.mode).to.equal(AgentMode.AGENT);
  });

  it("a resume continues in the mode the checkpoint records", async () => {
    const fake = await rig.fake({ text: "Done here." });
    const conversationId = `modes-resume-${process.pid}-${Date.now()}`;
    const { run: first } = rig.start(fake, { text: "hello", mode: AgentMode.DEBUG, conversationId });
    expect(await first.done).to.deep.equal({ ok: true });
    fake.enqueue({ text: "Resumed." });
    const { run } = rig.start(fake, {
      text: "",
      resume: true,
      checkpoint: first.lastCheckpoint()!,
      conversationId,
    });
    expect(await run.done).to.deep.equal({ ok: true });
    expect(offeredNames(fake.requests[1]!)).to.deep.equal(offered("debug"));
  });
});
