// The MCP definition table and the model-facing MCP tools (docs/protocol/cursor-tools.md §5.15): name mapping, stable
// order whatever order the client sends, the server taken from the client's definition name, and the refresh from a
// GetMcpTools listing.
import { create, fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import fc from "fast-check";
import { McpStateServerSchema, McpToolDefinitionSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import {
  MAX_OFFERED_MCP_TOOLS,
  mcpModelName,
  mcpToolOf,
  mcpToolsForRun,
  refreshedCatalog,
} from "../../cursor/tools/mcp-tools.js";

const def = (name: string, provider: string, tool: string, schema?: unknown) =>
  create(McpToolDefinitionSchema, {
    name,
    description: `does ${tool}`,
    providerIdentifier: provider,
    toolName: tool,
    ...(schema === undefined ? {} : { inputSchema: fromJson(ValueSchema, schema as never) }),
  });

describe("MCP tools offered to the model", () => {
  it("maps (server, tool) to mcp__<server>__<tool> with every other character replaced by _", () => {
    expect(mcpModelName("user-context7", "query-docs")).to.equal("mcp__user-context7__query-docs");
    expect(mcpModelName("my server", "a.b/c")).to.equal("mcp__my_server__a_b_c");
  });

  it("cuts long names to 64 characters with a digest, so two long names stay apart", () => {
    const a = mcpModelName("s".repeat(50), "tool_one");
    const b = mcpModelName("s".repeat(50), "tool_two");
    expect(a).to.have.length(64);
    expect(a).to.match(/_[0-9a-f]{8}$/);
    expect(a).to.not.equal(b);
  });

  it("files a definition under the server its name carries, else under its provider", () => {
    const { catalog } = mcpToolsForRun([
      def("plugin-browser-use-browser-use-browser_exec", "browser-use", "browser_exec"),
      def("odd-name", "prov", "tool"),
    ]);
    expect(mcpToolOf(catalog, "plugin-browser-use-browser-use", "browser_exec")?.providerIdentifier).to.equal(
      "browser-use",
    );
    expect(mcpToolOf(catalog, "prov", "tool")?.name).to.equal("odd-name");
  });

  it("offers an object schema as the tool's parameters, anything else as an empty object schema", () => {
    const { tools } = mcpToolsForRun([
      def("s-a", "p", "a", { properties: { x: { type: "string" } } }),
      def("s-b", "p", "b", "not a schema"),
      def("s-c", "p", "c", { type: "array", items: {} }),
    ]);
    expect(tools.map((t) => t.parameters)).to.deep.equal([
      { type: "object", properties: { x: { type: "string" } } },
      { type: "object", properties: {} },
      { type: "object", properties: {} },
    ]);
    expect(tools[0]!.description).to.equal('MCP tool "a" of server "s". does a');
  });

  it("gives the same names in the same order whatever order the client sends, all valid and distinct", () => {
    const tool = fc.record({
      server: fc.string({ minLength: 1, maxLength: 40 }),
      tool: fc.string({ minLength: 1, maxLength: 40 }),
    });
    fc.assert(
      fc.property(fc.uniqueArray(tool, { selector: (t) => `${t.server}\u0000${t.tool}`, maxLength: 12 }), (list) => {
        const defs = list.map((t) => def(`${t.server}-${t.tool}`, "p", t.tool));
        const forward = mcpToolsForRun(defs).tools.map((t) => t.name);
        const backward = mcpToolsForRun([...defs].reverse()).tools.map((t) => t.name);
        expect(backward).to.deep.equal(forward);
        expect(new Set(forward).size).to.equal(forward.length);
        for (const name of forward) expect(name).to.match(/^mcp__[A-Za-z0-9_-]{1,59}$/);
      }),
    );
  });

  it(`offers at most ${MAX_OFFERED_MCP_TOOLS} tools; the rest stay callable through CallMcpTool`, () => {
    const defs = Array.from({ length: MAX_OFFERED_MCP_TOOLS + 4 }, (_, i) => def(`s-t${i}`, "p", `t${i}`));
    const { tools, catalog } = mcpToolsForRun(defs);
    expect(tools).to.have.length(MAX_OFFERED_MCP_TOOLS);
    expect(catalog.byServerTool.size).to.equal(MAX_OFFERED_MCP_TOOLS + 4);
  });

  it("a GetMcpTools listing replaces the table and keeps the names of tools still there", () => {
    const { catalog } = mcpToolsForRun([def("s-a", "p", "a"), def("s-gone", "p", "gone")]);
    const listing = [
      create(McpStateServerSchema, {
        serverIdentifier: "s",
        tools: [def("s-a", "p2", "a"), def("s-new", "p", "new")],
      }),
    ];
    const next = refreshedCatalog(catalog, listing);
    expect(mcpToolOf(next, "s", "a")?.providerIdentifier).to.equal("p2");
    expect(mcpToolOf(next, "s", "gone")).to.equal(undefined);
    expect([...next.byModelName.keys()].sort()).to.deep.equal(["mcp__s__a", "mcp__s__new"]);
    expect(next.byModelName.get("mcp__s__a")?.providerIdentifier).to.equal("p2");
  });
});
