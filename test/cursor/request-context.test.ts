// The effective request context (docs/protocol/cursor-run.md §2.6.1): inline fields first, dynamic_context for the
// rest, each referenced part replacing its fields; a mis-sized or undecodable part is refused.
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { blobId } from "../../cursor/blob-graph.js";
import {
  effectiveRequestContext,
  mcpContext,
  partReferences,
  RequestContextPartError,
} from "../../cursor/request-context.js";
import {
  RequestContextMcpsPartSchema,
  RequestContextPartReferencesSchema,
  RequestContextRulesPartSchema,
  RequestContextSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";

const rules = toBinary(
  RequestContextRulesPartSchema,
  create(RequestContextRulesPartSchema, {
    rules: [{ fullPath: ".cursor/rules/a.mdc", content: "part rule" }],
    cloudRule: "cloud rule",
  }),
);
const mcps = toBinary(
  RequestContextMcpsPartSchema,
  create(RequestContextMcpsPartSchema, {
    tools: [{ name: "docs-search", toolName: "search", providerIdentifier: "docs" }],
    mcpInstructions: [{ serverName: "docs", instructions: "ask docs" }],
  }),
);
const blobs = new Map([rules, mcps].map((b) => [Buffer.from(blobId(b)).toString("hex"), b]));
const read = (id: Uint8Array) => blobs.get(Buffer.from(id).toString("hex"));

describe("cursor/request-context", () => {
  it("without parts or dynamic_context the inline context is used as it is", () => {
    const inline = create(RequestContextSchema, { rules: [{ content: "inline" }] });
    expect(effectiveRequestContext(inline, undefined, read)).to.equal(inline);
  });

  it("inline fields win over dynamic_context, and each part replaces the fields it carries", () => {
    const inline = create(RequestContextSchema, { rules: [{ content: "inline" }], env: { shell: "zsh" } });
    const refs = create(RequestContextPartReferencesSchema, {
      rulesBlobId: blobId(rules),
      rulesByteLength: rules.byteLength,
      mcpsBlobId: blobId(mcps),
      mcpsByteLength: mcps.byteLength,
      dynamicContext: { env: { shell: "bash" }, gitRepos: [{ path: "/w", branchName: "main" }] },
    });
    expect(partReferences(refs).map((p) => p.kind)).to.deep.equal(["rules", "mcps"]);
    const ctx = effectiveRequestContext(inline, refs, read)!;
    expect(ctx.env?.shell).to.equal("zsh");
    expect(ctx.gitRepos.map((r) => r.branchName)).to.deep.equal(["main"]);
    expect(ctx.rules.map((r) => r.content)).to.deep.equal(["part rule"]);
    expect(ctx.cloudRule).to.equal("cloud rule");
    const mcp = mcpContext(ctx);
    expect(mcp.tools.map((t) => t.toolName)).to.deep.equal(["search"]);
    expect(mcp.instructions.map((i) => i.instructions)).to.deep.equal(["ask docs"]);
    expect(
      inline.rules.map((r) => r.content),
      "the inline message is not changed",
    ).to.deep.equal(["inline"]);
  });

  it("a part whose bytes differ in length from the reference is refused", () => {
    const refs = create(RequestContextPartReferencesSchema, {
      rulesBlobId: blobId(rules),
      rulesByteLength: rules.byteLength + 1,
    });
    expect(() => effectiveRequestContext(undefined, refs, read)).to.throw(RequestContextPartError, /bytes/);
  });

  it("a part that is not its message, or is missing, is refused", () => {
    const junk = new Uint8Array([0xff, 0xff, 0xff]);
    const refs = create(RequestContextPartReferencesSchema, { skillsBlobId: blobId(junk), skillsByteLength: 3 });
    expect(() => effectiveRequestContext(undefined, refs, () => junk)).to.throw(
      RequestContextPartError,
      /RequestContextSkillsPart/,
    );
    expect(() => effectiveRequestContext(undefined, refs, () => undefined)).to.throw(RequestContextPartError);
  });
});
