// The MCP drivers' branch mapping (docs/protocol/cursor-tools.md §5.7, §5.8, §5.15): every result branch to its card
// branch and text, approvals that are not results, and the answers that are protocol errors.
import { create, fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { McpToolDefinitionSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { callMcpToolDriver, mcpToolDriver } from "../../cursor/tools/mcp-call.js";
import { fetchMcpResourceDriver } from "../../cursor/tools/mcp-resource.js";
import { getMcpToolsDriver } from "../../cursor/tools/mcp-state.js";
import { mcpToolsForRun } from "../../cursor/tools/mcp-tools.js";
import type { ToolContext } from "../../cursor/tools/types.js";
import {
  branch,
  clientMessage,
  completionOf,
  ctx,
  execOf,
  invocation,
  protocolErrorOf,
  startedCall,
} from "./helpers.js";

const mcp = mcpToolsForRun([
  create(McpToolDefinitionSchema, {
    name: "user-db-query",
    description: "Run SQL.",
    providerIdentifier: "db",
    toolName: "query",
    inputSchema: fromJson(ValueSchema, { type: "object" }),
  }),
]).catalog;
const withMcp: ToolContext = { ...ctx, mcp };

const callArgs = { server: "user-db", toolName: "query", arguments: { sql: "select 1", limit: 2 } };
const mcpResult = (result: object) => clientMessage({ case: "mcpResult", value: { result: result as never } });

describe("CallMcpTool and the MCP tools offered by name", () => {
  it("sends mcp_args with the client's definition and the model's arguments", () => {
    const call = invocation("CallMcpTool", callArgs);
    const { request } = execOf(callMcpToolDriver.begin(call, withMcp));
    if (request.case !== "mcpArgs") expect.fail(`expected mcp_args, got ${request.case}`);
    expect(request.value).to.deep.include({ name: "user-db-query", providerIdentifier: "db", toolName: "query" });
    expect(Object.keys(request.value.args)).to.deep.equal(["sql", "limit"]);
    const started = branch(startedCall(callMcpToolDriver.started(call, withMcp)), "mcpToolCall");
    expect(started.args?.providerIdentifier).to.equal("db");
  });

  it("the offered name reaches the same definition with the whole argument object", () => {
    const call = invocation("mcp__user-db__query", { sql: "select 1" });
    const { request } = execOf(mcpToolDriver.begin(call, withMcp));
    expect(request.value).to.deep.include({ name: "user-db-query", toolName: "query" });
  });

  it("keeps is_error of a success and compiles text, output location and structured content", () => {
    const call = invocation("CallMcpTool", callArgs);
    const { state } = execOf(callMcpToolDriver.begin(call, withMcp));
    const step = callMcpToolDriver.onExecMessage(
      call,
      state,
      mcpResult({
        case: "success",
        value: {
          content: [{ content: { case: "text", value: { text: "3 rows", outputLocation: { filePath: "/tmp/o" } } } }],
          isError: true,
          structuredContent: { rows: 3 },
        },
      }),
    );
    const done = completionOf(step);
    expect(done).to.deep.include({
      content: '3 rows\n[Full output: /tmp/o]\nStructured content: {"rows":3}',
      isError: true,
    });
    expect(branch(done.toolCall, "mcpToolCall").result?.result.case).to.equal("success");
  });

  const failures: Array<[string, object, string, string]> = [
    ["error", { case: "error", value: { error: "timeout" } }, "MCP tool query failed: timeout", "error"],
    [
      "rejected",
      { case: "rejected", value: { reason: "no" } },
      "The user rejected the call to MCP tool query: no",
      "rejected",
    ],
    [
      "permission",
      { case: "permissionDenied", value: { error: "ro" } },
      "Permission denied for MCP tool query: ro",
      "permissionDenied",
    ],
    [
      "server",
      { case: "serverNotFound", value: { name: "user-db", availableServers: ["a"] } },
      "MCP server not found: user-db. Available: a.",
      "error",
    ],
  ];
  for (const [label, result, text, card] of failures) {
    it(`maps ${label} to an error text and the card's ${card}`, () => {
      const call = invocation("CallMcpTool", callArgs);
      const { state } = execOf(callMcpToolDriver.begin(call, withMcp));
      const done = completionOf(callMcpToolDriver.onExecMessage(call, state, mcpResult(result)));
      expect(done).to.deep.include({ content: text, isError: true });
      expect(branch(done.toolCall, "mcpToolCall").result?.result.case).to.equal(card);
    });
  }

  it("an approval is not a result, an empty result and a wrong branch are protocol errors", () => {
    const call = invocation("CallMcpTool", callArgs);
    const { state } = execOf(callMcpToolDriver.begin(call, withMcp));
    expect(callMcpToolDriver.onExecMessage(call, state, mcpResult({ case: "approved", value: {} })).kind).to.equal(
      "wait",
    );
    expect(protocolErrorOf(callMcpToolDriver.onExecMessage(call, state, mcpResult({})))).to.include("no result set");
    const wrong = clientMessage({ case: "readResult", value: {} });
    expect(protocolErrorOf(callMcpToolDriver.onExecMessage(call, state, wrong))).to.include("expected mcp_result");
  });

  it("refuses arguments that are not an object, and never sends mcp_args for an unknown tool", () => {
    const bad = callMcpToolDriver.started(invocation("CallMcpTool", { ...callArgs, arguments: [1] }), withMcp);
    expect(bad).to.deep.equal({
      invalid: 'Invalid arguments for CallMcpTool: "arguments" must be an object, got an array.',
    });
    const unknown = callMcpToolDriver.begin(invocation("CallMcpTool", callArgs), ctx);
    expect(completionOf(unknown).isError).to.equal(true);
  });
});

describe("GetMcpTools", () => {
  const servers = [
    {
      serverName: "db",
      serverIdentifier: "user-db",
      status: "connected",
      tools: [
        { name: "user-db-query", toolName: "query", description: "Run SQL." },
        { name: "user-db-schema", toolName: "schema" },
      ],
      instructions: [{ serverName: "db", instructions: "Read-only." }],
    },
    { serverName: "web", serverIdentifier: "user-web", tools: [{ name: "user-web-get", toolName: "get" }] },
  ];
  const listed = clientMessage({
    case: "mcpStateExecResult",
    value: { result: { case: "success", value: { servers } } },
  });

  it("filters the live listing by pattern and keeps the whole listing for the table", () => {
    const call = invocation("GetMcpTools", { pattern: "^q" });
    const { request, state } = execOf(getMcpToolsDriver.begin(call, ctx));
    expect(request.case).to.equal("mcpStateExecArgs");
    const done = completionOf(getMcpToolsDriver.onExecMessage(call, state, listed));
    expect(done.content).to.equal(
      "Server: user-db (db)\nStatus: connected\nInstructions: Read-only.\n- query: Run SQL.\n\n" +
        "Call a tool with CallMcpTool {server, toolName, arguments}.",
    );
    expect(done.mcpServers?.map((s) => s.serverIdentifier)).to.deep.equal(["user-db", "user-web"]);
  });

  it("says when nothing matches, and refuses a pattern that is no regular expression", () => {
    const call = invocation("GetMcpTools", { server: "nope" });
    const { state } = execOf(getMcpToolsDriver.begin(call, ctx));
    expect(completionOf(getMcpToolsDriver.onExecMessage(call, state, listed)).content).to.equal("No MCP tools match.");
    expect(getMcpToolsDriver.started(invocation("GetMcpTools", { pattern: "(" }), ctx)).to.deep.equal({
      invalid: 'Invalid arguments for GetMcpTools: "pattern" is not a valid regular expression.',
    });
  });
});

describe("FetchMcpResource", () => {
  it("describes a binary resource by type and size, and where it was saved", () => {
    const call = invocation("FetchMcpResource", { server: "s", uri: "file://a.png", downloadPath: "a.png" });
    const { request, state } = execOf(fetchMcpResourceDriver.begin(call, ctx));
    expect(request.value).to.deep.include({ server: "s", uri: "file://a.png", downloadPath: "a.png" });
    const reply = clientMessage({
      case: "readMcpResourceExecResult",
      value: {
        result: {
          case: "success",
          value: {
            uri: "file://a.png",
            mimeType: "image/png",
            downloadPath: "a.png",
            content: { case: "blob", value: new Uint8Array(3) },
          },
        },
      },
    });
    expect(completionOf(fetchMcpResourceDriver.onExecMessage(call, state, reply))).to.deep.include({
      content: "file://a.png is binary (image/png, 3 bytes). It was saved to a.png.",
      isError: false,
    });
  });
});
