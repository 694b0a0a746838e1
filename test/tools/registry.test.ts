import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolCallSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { toolDriver, toolNames } from "../../cursor/tools/registry.js";
import { CALL_ID, clientMessage, ctx, execOf, invocation } from "./helpers.js";

const cards: Record<string, string> = {
  Read: "readToolCall",
  Grep: "grepToolCall",
  Glob: "globToolCall",
  Ls: "lsToolCall",
  Shell: "shellToolCall",
  Write: "editToolCall",
  StrReplace: "editToolCall",
  Delete: "deleteToolCall",
  ReadLints: "readLintsToolCall",
  EditNotebook: "editToolCall",
};

const validArgs: Record<string, Record<string, unknown>> = {
  Read: { path: "a" },
  Grep: { pattern: "a" },
  Glob: { glob_pattern: "*" },
  Ls: { path: "/" },
  Shell: { command: "true" },
  Write: { path: "a", contents: "" },
  StrReplace: { path: "a", old_string: "x", new_string: "y" },
  Delete: { path: "a" },
  ReadLints: { paths: ["a"] },
  EditNotebook: {
    target_notebook: "a.ipynb",
    cell_idx: 0,
    is_new_cell: false,
    cell_language: "python",
    old_string: "x",
    new_string: "y",
  },
};

describe("tool registry", () => {
  it("lists the tools, each with exactly one driver; unknown names have none", () => {
    expect([...toolNames]).to.deep.equal([
      ...["Read", "Grep", "Glob", "Ls", "Shell", "AwaitShell", "Write", "StrReplace", "AskQuestion", "CallMcpTool"],
      ...["FetchMcpResource", "GetMcpTools", "WebSearch", "GenerateImage", "CreatePlan", "SwitchMode", "Delete"],
      ...["ReadLints", "EditNotebook", "WebFetch", "TodoWrite", "UpdateCurrentStep", "Task"],
    ]);
    expect(toolDriver("NoSuchTool")).to.equal(undefined);
    // The MCP tools offered under their own names share one driver (docs/protocol/cursor-tools.md §5.15).
    expect(toolDriver("mcp__server__tool")?.name).to.equal("MCP tool");
    expect(toolDriver("read")).to.equal(undefined);
  });

  for (const name of Object.keys(cards)) {
    it(`${name}: placeholder is the typed empty ${cards[name]} and keeps a newline call id through the wire`, () => {
      const driver = toolDriver(name);
      if (!driver) expect.fail(`no driver for ${name}`);
      const decoded = fromBinary(ToolCallSchema, toBinary(ToolCallSchema, driver.placeholder(CALL_ID)));
      expect(decoded.toolCallId).to.equal(CALL_ID);
      expect(decoded.tool.case).to.equal(cards[name]);
      const value = decoded.tool.value as { args?: unknown; result?: unknown };
      expect(value.args).to.equal(undefined);
      expect(value.result).to.equal(undefined);
    });

    it(`${name}: an Exec message with no oneof set is not a result (keep waiting)`, () => {
      const driver = toolDriver(name);
      if (!driver) expect.fail(`no driver for ${name}`);
      const call = invocation(name, validArgs[name]);
      const { state } = execOf(driver.begin(call, ctx));
      expect(driver.onExecMessage(call, state, clientMessage({ case: undefined })).kind).to.equal("wait");
    });
  }
});
