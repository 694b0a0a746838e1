// Wire-level e2e: MCP (docs/protocol/cursor-tools.md §5.7, §5.8, §5.15). The MCP tools the run request announces are
// offered to the model under their own names after the mode's tools; calls to them, CallMcpTool, GetMcpTools and
// FetchMcpResource run on the client through Exec, always with the client's own definitions. A tool the run does not
// know is an error result the model reads, never a protocol failure.
import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import {
  type AgentRunRequest,
  type McpToolDefinition,
  McpToolDefinitionSchema,
  McpToolsSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecResultMessage } from "../support/client-workspace.js";
import type { RunHooks } from "../support/cursor-client.js";
import { clientMessage } from "../tools/helpers.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  SETTLED_ROUND_THEN_ANSWER,
  updates,
  useToolsRig,
} from "./tools-kit.js";

/** The captured shape: definition name = `<server identifier>-<tool name>`, the provider named apart. */
const definition = (server: string, provider: string, tool: string, description: string) =>
  create(McpToolDefinitionSchema, {
    name: `${server}-${tool}`,
    description,
    providerIdentifier: provider,
    toolName: tool,
    inputSchema: fromJson(ValueSchema, {
      type: "object",
      properties: { query: { type: "string" } },
      required: ["query"],
    }),
  });

const browser = definition("plugin-browser-use-browser-use", "browser-use", "browser_exec", "Run browser code.");
const docs = definition("user-context7", "context7", "query-docs", "Query library documentation.");

const announcing =
  (...defs: McpToolDefinition[]) =>
  (request: AgentRunRequest) => {
    request.mcpTools = create(McpToolsSchema, { mcpTools: defs });
  };

const STAGED = [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
  "tool_call_started",
];

/** The client answers every Exec of `kind` with `result`. */
const answering = (kind: string, result: ExecResultMessage): RunHooks => ({
  onExec: (exec) => (exec.message.case === kind ? { result } : undefined),
});

const mcpSuccess = clientMessage({
  case: "mcpResult",
  value: {
    result: {
      case: "success",
      value: {
        content: [
          { content: { case: "text", value: { text: "Use invoke." } } },
          { content: { case: "image", value: { data: new Uint8Array([1, 2, 3, 4]), mimeType: "image/png" } } },
        ],
        isError: false,
      },
    },
  },
});

function mcpCard(run: Parameters<typeof updates>[0]) {
  const [completed] = updates(run, "toolCallCompleted");
  const tool = completed!.toolCall!.tool;
  if (tool.case !== "mcpToolCall") expect.fail(`expected an MCP card, got ${tool.case}`);
  return tool.value;
}

describe("e2e tools: MCP", function () {
  this.timeout(15_000);
  const rig = useToolsRig("tools-mcp");

  it("offers the announced MCP tools under their own names, sorted, and calls one with the client's definition", async () => {
    const fake = await rig.fake();
    const args = { query: "how to invoke an actor" };
    fake.enqueue(
      { text: "Checking the docs.", toolCalls: [{ id: "call_mcp_1", name: "mcp__user-context7__query-docs", args }] },
      { text: "Use invoke." },
    );
    const { client, run } = rig.start(fake, {
      text: "how do I invoke an actor?",
      customize: announcing(docs, browser),
      hooks: answering("mcpArgs", mcpSuccess),
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED,
      "exec:mcp_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const tools = (fake.requests[0]!.body.tools as Array<{ function: { name: string; description: string } }>).map(
      (t) => t.function,
    );
    expect(tools.slice(-2).map((t) => t.name)).to.deep.equal([
      "mcp__plugin-browser-use-browser-use__browser_exec",
      "mcp__user-context7__query-docs",
    ]);
    expect(tools.at(-1)).to.deep.equal({
      name: "mcp__user-context7__query-docs",
      description: 'MCP tool "query-docs" of server "user-context7". Query library documentation.',
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    });
    expect(tools.slice(0, -2).map((t) => t.name)).to.include.members(["Read", "CallMcpTool", "GetMcpTools"]);

    const [exec] = execs(run);
    const sent = exec!.value as { name: string; providerIdentifier: string; toolName: string; toolCallId: string };
    expect(sent).to.deep.include({
      name: "user-context7-query-docs",
      providerIdentifier: "context7",
      toolName: "query-docs",
      toolCallId: "call_mcp_1",
    });
    const sentArgs = (exec!.value as { args: Record<string, Parameters<typeof toJson>[1]> }).args;
    expect(toJson(ValueSchema, sentArgs.query as never)).to.equal("how to invoke an actor");

    const result = mcpCard(run).result!.result;
    if (result.case !== "success") expect.fail(`expected a success result, got ${result.case}`);
    expect(result.value.content.map((c) => c.content.case)).to.deep.equal(["text", "image"]);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.equal({
      role: "tool",
      tool_call_id: "call_mcp_1",
      content: "Use invoke.\n[Image: image/png, 4 bytes]",
    });
  });

  it("offers the request context's MCP tools when the run request announces none", async () => {
    const fake = await rig.fake({ text: "Noted." });
    const { run } = rig.start(fake, {
      text: "which tools do you have?",
      customize: (request) => {
        const action = request.action?.action;
        if (action?.case !== "userMessageAction" || !action.value.requestContext) expect.fail("no request context");
        action.value.requestContext.tools = [docs];
      },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    const names = (fake.requests[0]!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(names.at(-1)).to.equal("mcp__user-context7__query-docs");
  });

  it("CallMcpTool for a tool the run does not know: an error result, no mcp_args sent", async () => {
    const fake = await rig.fake();
    const call = { server: "user-gone", toolName: "vanished", arguments: {} };
    fake.enqueue(
      { text: "Calling.", toolCalls: [{ id: "call_mcp_2", name: "CallMcpTool", args: call }] },
      { text: "OK." },
    );
    const { client, run } = rig.start(fake, { text: "use the tool", customize: announcing(docs) });
    await run.done;
    expect(run.kinds()).to.deep.equal([...STAGED, "tool_call_completed", ...SETTLED_ROUND_THEN_ANSWER]);
    assertCleanSuccess(run, client);
    expect(execs(run)).to.deep.equal([]);
    expect(mcpCard(run).result!.result.case).to.equal("error");
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({
      content:
        'MCP tool "vanished" of server "user-gone" is not known in this run. Call GetMcpTools to list the tools the ' +
        "client has now, then call one of those.",
    });
  });

  it("an MCP tool name this run no longer offers is an error result the model reads, not a failed run", async () => {
    const fake = await rig.fake();
    const gone = { id: "call_mcp_5", name: "mcp__user-gone__vanished", args: { query: "x" } };
    fake.enqueue({ text: "Calling.", toolCalls: [gone] }, { text: "It is gone." });
    const { client, run } = rig.start(fake, { text: "use the tool", customize: announcing(docs) });
    await run.done;
    expect(run.kinds()).to.deep.equal([...STAGED, "tool_call_completed", ...SETTLED_ROUND_THEN_ANSWER]);
    assertCleanSuccess(run, client);
    expect(execs(run)).to.deep.equal([]);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({
      content:
        "The MCP tool mcp__user-gone__vanished no longer exists on the client. Call GetMcpTools to list the tools " +
        "it has now, then use CallMcpTool.",
    });
  });

  it("an MCP tool the client no longer has (tool_not_found) is an error result the model reads", async () => {
    const fake = await rig.fake(
      {
        text: "Calling.",
        toolCalls: [
          { id: "call_mcp_3", name: "CallMcpTool", args: { server: "user-context7", toolName: "query-docs" } },
        ],
      },
      { text: "It is gone." },
    );
    const notFound = clientMessage({
      case: "mcpResult",
      value: {
        result: { case: "toolNotFound", value: { name: "query-docs", availableTools: ["resolve-library-id"] } },
      },
    });
    const { client, run } = rig.start(fake, {
      text: "use the tool",
      customize: announcing(docs),
      hooks: answering("mcpArgs", notFound),
    });
    await run.done;
    expect(run.kinds()).to.deep.equal([
      ...STAGED,
      "exec:mcp_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(mcpCard(run).result!.result.case).to.equal("error");
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({
      content:
        "MCP tool not found: query-docs. Available: resolve-library-id. Call GetMcpTools to see the current tools.",
    });
  });

  it("GetMcpTools lists the client's live servers, and a later CallMcpTool uses the listed definition", async () => {
    const fake = await rig.fake(
      {
        text: "Listing.",
        toolCalls: [{ id: "call_get_1", name: "GetMcpTools", args: { server: "plugin-browser-use-browser-use" } }],
      },
      {
        text: "Calling.",
        toolCalls: [
          {
            id: "call_mcp_4",
            name: "CallMcpTool",
            args: { server: "plugin-browser-use-browser-use", toolName: "browser_exec", arguments: { query: "title" } },
          },
        ],
      },
      { text: "The title is Example." },
    );
    const state = clientMessage({
      case: "mcpStateExecResult",
      value: {
        result: {
          case: "success",
          value: {
            servers: [
              { serverName: "browser-use", serverIdentifier: "plugin-browser-use-browser-use", tools: [browser] },
              { serverName: "context7", serverIdentifier: "user-context7", tools: [docs] },
            ],
          },
        },
      },
    });
    const { client, run } = rig.start(fake, {
      text: "what is the page title?",
      hooks: {
        onExec: (exec) =>
          exec.message.case === "mcpStateExecArgs"
            ? { result: state }
            : exec.message.case === "mcpArgs"
              ? { result: mcpSuccess }
              : undefined,
      },
    });
    await run.done;
    assertCleanSuccess(run, client);
    const kinds = run.kinds();
    expect(kinds.slice(0, STAGED.length + 2)).to.deep.equal([
      ...STAGED,
      "exec:mcp_state_exec_args",
      "tool_call_completed",
    ]);
    expect(kinds.filter((k) => k.startsWith("exec:") || k.startsWith("tool_call_"))).to.deep.equal([
      "tool_call_started",
      "exec:mcp_state_exec_args",
      "tool_call_completed",
      "tool_call_started",
      "exec:mcp_args",
      "tool_call_completed",
    ]);
    expect(kinds.slice(-SETTLED_ROUND_THEN_ANSWER.length)).to.deep.equal(SETTLED_ROUND_THEN_ANSWER);

    const [, call] = execs(run);
    expect(call!.value).to.deep.include({
      name: "plugin-browser-use-browser-use-browser_exec",
      providerIdentifier: "browser-use",
      toolName: "browser_exec",
    });
    const [listed] = updates(run, "toolCallCompleted");
    const card = listed!.toolCall!.tool;
    if (card.case !== "getMcpToolsToolCall") expect.fail(`expected a GetMcpTools card, got ${card.case}`);
    expect(card.value.result?.result.case).to.equal("success");
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({
      content:
        "Server: plugin-browser-use-browser-use (browser-use)\n- browser_exec: Run browser code.\n" +
        '  Input schema: {"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}\n\n' +
        "Call a tool with CallMcpTool {server, toolName, arguments}.",
    });
  });

  it("GetMcpTools: a rejected listing is an error result", async () => {
    const fake = await rig.fake(
      { text: "Listing.", toolCalls: [{ id: "call_get_2", name: "GetMcpTools", args: {} }] },
      { text: "No." },
    );
    const rejected = clientMessage({
      case: "mcpStateExecResult",
      value: { result: { case: "rejected", value: { reason: "MCP is off" } } },
    });
    const { client, run } = rig.start(fake, { text: "list MCP", hooks: answering("mcpStateExecArgs", rejected) });
    await run.done;
    expect(run.kinds()).to.deep.equal([
      ...STAGED,
      "exec:mcp_state_exec_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ content: "Listing the MCP tools was rejected: MCP is off" });
  });

  for (const [label, result, content, branch] of [
    [
      "returns a text resource as the text result, the typed result unchanged on the card",
      {
        case: "success",
        value: { uri: "docs://readme", mimeType: "text/markdown", content: { case: "text", value: "# Readme" } },
      },
      "# Readme",
      "success",
    ],
    [
      "reports a missing resource as an error result",
      { case: "notFound", value: { uri: "docs://readme" } },
      "MCP resource not found: docs://readme",
      "notFound",
    ],
  ] as const) {
    it(`FetchMcpResource ${label}`, async () => {
      const fake = await rig.fake();
      const args = { server: "user-docs", uri: "docs://readme" };
      fake.enqueue(
        { text: "Reading.", toolCalls: [{ id: "call_res_1", name: "FetchMcpResource", args }] },
        { text: "Read." },
      );
      const reply = clientMessage({ case: "readMcpResourceExecResult", value: { result: result as never } });
      const { client, run } = rig.start(fake, { text: "read it", hooks: answering("readMcpResourceExecArgs", reply) });
      await run.done;
      expect(run.kinds()).to.deep.equal([
        ...STAGED,
        "exec:read_mcp_resource_exec_args",
        "tool_call_completed",
        ...SETTLED_ROUND_THEN_ANSWER,
      ]);
      assertCleanSuccess(run, client);
      expect(execs(run)[0]!.value).to.deep.include({ server: "user-docs", uri: "docs://readme" });
      const [completed] = updates(run, "toolCallCompleted");
      const tool = completed!.toolCall!.tool;
      if (tool.case !== "readMcpResourceToolCall") expect.fail(`expected a resource card, got ${tool.case}`);
      expect(tool.value.result?.result.case).to.equal(branch);
      const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
      expect(added[1]).to.deep.include({ content });
    });
  }
});
