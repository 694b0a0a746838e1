// The ACP worker family's two small seams: the config's `workers.codex` / `workers.acp` blocks (engine/config.ts),
// and the AEP mapping of the ACP WorkerEvents (aep/wire/mapping.ts): tool_call/tool_result extension fields,
// tool_update, plan, mode_update — and that Claude Code's events still carry none of the extension fields.
import { expect } from "chai";
import { initialMapping, mapContent } from "../../aep/wire/mapping.js";
import { parseConfig } from "../../engine/config.js";

const events = (event: Parameters<typeof mapContent>[1]) => mapContent(initialMapping, event).events;

describe("ACP workers: config", () => {
  it("accepts workers.codex (command optional) and workers.acp, next to claude-code with apiKeyEnv", () => {
    const config = parseConfig(
      JSON.stringify({
        models: [],
        workers: {
          "claude-code": { apiKeyEnv: "ANTHROPIC_KEY_FOR_TEST" },
          codex: { args: ["-c", 'model="gpt-5.3-codex"'], env: { OPENAI_API_KEY: "sk-x" }, mode: "auto" },
          acp: { command: "/usr/local/bin/my-agent", args: ["--acp"] },
        },
      }),
      "config.json",
      { ANTHROPIC_KEY_FOR_TEST: "sk-ant-test" },
    );
    expect(config.workers?.codex).to.deep.equal({
      args: ["-c", 'model="gpt-5.3-codex"'],
      env: { OPENAI_API_KEY: "sk-x" },
      mode: "auto",
    });
    expect(config.workers?.acp).to.deep.equal({ command: "/usr/local/bin/my-agent", args: ["--acp"] });
    expect(config.workers?.["claude-code"]?.env).to.deep.equal({ ANTHROPIC_API_KEY: "sk-ant-test" });
  });

  it("refuses workers.acp without a command, and unknown keys, naming the field", () => {
    const parse = (workers: object) => () => parseConfig(JSON.stringify({ models: [], workers }), "config.json", {});
    expect(parse({ acp: { args: [] } })).to.throw(/workers\.acp\.command/);
    expect(parse({ codex: { model: "x" } })).to.throw(/workers\.codex/);
  });
});

describe("ACP workers: AEP mapping", () => {
  const diff = { path: "/w/a.txt", newText: "new\n" };

  it("tool_call carries title, kind and locations only when the worker gave them", () => {
    expect(
      events({
        type: "tool.called",
        id: "t1",
        name: "edit",
        input: {},
        title: "Edit a.txt",
        kind: "edit",
        locations: [{ path: "/w/a.txt", line: 2 }],
      }),
    ).to.deep.equal([
      {
        type: "tool_call",
        data: {
          id: "t1",
          name: "edit",
          input: {},
          title: "Edit a.txt",
          kind: "edit",
          locations: [{ path: "/w/a.txt", line: 2 }],
        },
      },
    ]);
    expect(events({ type: "tool.called", id: "b", name: "Bash", input: { command: "ls" } })).to.deep.equal([
      { type: "tool_call", data: { id: "b", name: "Bash", input: { command: "ls" } } },
    ]);
  });

  it("tool_update and tool_result carry the diff in AEP's shape (old_text empty for a new file)", () => {
    expect(events({ type: "tool.updated", id: "t1", status: "in_progress", diff })).to.deep.equal([
      {
        type: "tool_update",
        data: { id: "t1", status: "in_progress", diff: { path: "/w/a.txt", old_text: "", new_text: "new\n" } },
      },
    ]);
    expect(events({ type: "tool.result", id: "t1", output: "ok", isError: false, diff })).to.deep.equal([
      {
        type: "tool_result",
        data: {
          id: "t1",
          output: "ok",
          status: "completed",
          diff: { path: "/w/a.txt", old_text: "", new_text: "new\n" },
        },
      },
    ]);
  });

  it("plan.updated is plan{items}, mode.updated is mode_update{mode}", () => {
    const entries = [{ content: "step", priority: "high", status: "pending" }];
    expect(events({ type: "plan.updated", entries })).to.deep.equal([{ type: "plan", data: { items: entries } }]);
    expect(events({ type: "mode.updated", mode: "code" })).to.deep.equal([
      { type: "mode_update", data: { mode: "code" } },
    ]);
  });
});
