import { expect } from "chai";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  loadPromptAssets,
  MODE_IDS,
  type ModeId,
  PromptAssetError,
  toolSchemaDigest,
  type ToolDefinition,
} from "../../prompt/assets.js";

const PROMPT_DIR = fileURLToPath(new URL("../../prompt/", import.meta.url));
const FACTS = JSON.parse(
  readFileSync(fileURLToPath(new URL("./fixtures/tool-parameters.facts.json", import.meta.url)), "utf8"),
) as { parameters: Record<string, Record<string, unknown>> };
/** Each mode's manifest: the captured lists without SembleSearch / SembleFindRelated; agent adds our Ls
 * (docs/protocol/cursor-tools.md §6.2). */
const MODE_TOOLS: Record<ModeId, string[]> = {
  compaction: [],
  subagent: [
    ...["Shell", "Grep", "Delete", "WebSearch", "WebFetch", "GenerateImage", "ReadLints", "EditNotebook", "TodoWrite"],
    ...["StrReplace", "Write", "Read", "Glob", "GetMcpTools", "FetchMcpResource", "SwitchMode", "UpdateCurrentStep"],
    ...["CallMcpTool", "Task"],
  ],
  agent: [
    ...["Shell", "AwaitShell", "Grep", "Delete", "WebSearch", "WebFetch", "GenerateImage", "EditNotebook"],
    ...["TodoWrite", "StrReplace", "Write", "Read", "ReadLints", "Glob", "AskQuestion", "Task", "GetMcpTools"],
    ...["FetchMcpResource", "SwitchMode", "CallMcpTool", "Ls"],
  ],
  ask: [
    ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
    ...["StrReplace", "Task", "TodoWrite", "WebFetch", "WebSearch", "Write"],
  ],
  plan: [
    ...[
      "Shell",
      "Glob",
      "Grep",
      "Read",
      "TodoWrite",
      "ReadLints",
      "WebSearch",
      "WebFetch",
      "AskQuestion",
      "CreatePlan",
    ],
    ...["Task", "FetchMcpResource", "CallMcpTool"],
  ],
  debug: [
    ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
    ...["StrReplace", "Task", "TodoWrite", "WebFetch", "WebSearch", "Write"],
  ],
  multitask: [
    ...["AskQuestion", "CallMcpTool", "Delete", "FetchMcpResource", "Glob", "Grep", "Read", "ReadLints", "Shell"],
    ...["StrReplace", "SwitchMode", "Task", "TodoWrite", "WebFetch", "WebSearch", "Write", "GenerateImage"],
  ],
};
const AGENT_TOOLS = MODE_TOOLS.agent;

/**
 * The schema digest of each mode's whole manifest (toolSchemaDigest). A change to a tool list, an order, a schema
 * or a description moves the provider's cache boundary; updating a digest here is the deliberate step that says so.
 * Ask and debug offer the same list, as in the captures.
 */
const MODE_DIGESTS: Record<ModeId, string> = {
  subagent: "ece9b9f96e51249b2316345fa7c8df12eee40daf2fcba5af5fa88f8ce4197319",
  compaction: "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
  agent: "fe541ca24fbf305334073fee15a38921e03ed14c6a9331cca621bd3cee69247f",
  ask: "b42688a84301184b3157700f6e4fb14bd48cdf36eabd16097ba5f291d295773f",
  plan: "4ad1c77decef2832c4ef3f6c75f2b12e7d0369e2f51184225fffe02922d047f3",
  debug: "b42688a84301184b3157700f6e4fb14bd48cdf36eabd16097ba5f291d295773f",
  multitask: "104c6b559314673381068da2ce49b9ffa74cc1e74d774365f27ab2c220301983",
};

/**
 * The facts with every local `$ref` (a JSON pointer into the same schema) replaced by what it points at: the catalog
 * inlines them, because not every endpoint resolves references (UpdateCurrentStep's captured schema has two).
 */
function inlined(node: unknown, root: unknown = node): unknown {
  if (Array.isArray(node)) return node.map((n) => inlined(n, root));
  if (typeof node !== "object" || node === null) return node;
  const ref = (node as Record<string, unknown>).$ref;
  if (typeof ref === "string" && ref.startsWith("#/"))
    return inlined(
      ref
        .slice(2)
        .split("/")
        .reduce((at: unknown, key) => (at as Record<string, unknown>)[key], root),
      root,
    );
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, inlined(v, root)]));
}

/** Removes the description annotations we added (string-valued `description` keys), keeping key order. */
function withoutDescriptions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDescriptions);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, v]) => !(key === "description" && typeof v === "string"))
      .map(([key, v]) => [key, withoutDescriptions(v)]),
  );
}

/** Every string-valued `description` in a schema tree, with its path. */
function descriptionsIn(value: unknown, at: string): Array<[string, string]> {
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, v]) =>
    key === "description" && typeof v === "string"
      ? [[`${at}.${key}`, v] as [string, string]]
      : descriptionsIn(v, `${at}.${key}`),
  );
}

describe("prompt assets: loading the real assets", () => {
  const assets = loadPromptAssets();
  const agent = assets.modes.get("agent");

  for (const mode of MODE_IDS) {
    it(`loads the ${mode} mode with its own prompt and its tools in manifest order`, () => {
      const assets_ = assets.modes.get(mode)!;
      expect(assets_.tools.map((t) => t.name)).to.deep.equal(MODE_TOOLS[mode]);
      expect(assets_.systemPrompt.length).to.be.greaterThan(500);
      expect(assets_.runtimeTemplate).to.include("{{USER_QUERY}}");
    });

    it(`keeps the ${mode} mode's schema digest (a tool list change is deliberate)`, () => {
      expect(toolSchemaDigest(assets.modes.get(mode)!.tools)).to.equal(MODE_DIGESTS[mode]);
    });
  }

  it("gives every mode a system prompt of its own, but a subagent the agent's byte for byte", () => {
    const own = MODE_IDS.filter((m) => m !== "subagent");
    const prompts = new Set(own.map((m) => assets.modes.get(m)!.systemPrompt));
    expect(prompts.size).to.equal(own.length);
    expect(assets.modes.get("subagent")!.systemPrompt).to.equal(assets.modes.get("agent")!.systemPrompt);
  });

  it("defaults to the prompt folder of the source tree", () => {
    expect(toolSchemaDigest(loadPromptAssets(PROMPT_DIR).modes.get("agent")!.tools)).to.equal(
      toolSchemaDigest(agent!.tools),
    );
  });

  it("keeps every schema equal to the wire facts, key order included, apart from our descriptions", () => {
    for (const tool of assets.catalog.values()) {
      const expected = inlined(FACTS.parameters[tool.name]);
      expect(withoutDescriptions(tool.parameters), tool.name).to.deep.equal(expected);
      expect(JSON.stringify(withoutDescriptions(tool.parameters)), tool.name).to.equal(JSON.stringify(expected));
    }
  });

  it("has a non-empty description on every tool and every described property in tools.json", () => {
    const raw = JSON.parse(readFileSync(join(PROMPT_DIR, "tools.json"), "utf8")) as ToolDefinition[];
    for (const tool of raw) {
      expect(tool.description.trim(), tool.name).to.not.equal("");
      const props = Object.keys((tool.parameters.properties ?? {}) as object);
      const described = descriptionsIn(tool.parameters, tool.name);
      expect(described.length, `${tool.name} property descriptions`).to.be.at.least(props.length);
      for (const [path, text] of described) expect(text.trim(), path).to.not.equal("");
    }
  });

  it("teaches the Shell background contract of docs/protocol/cursor-tools.md §5.5", () => {
    const shell = assets.catalog.get("Shell")!;
    const text = [shell.description, ...descriptionsIn(shell.parameters, "Shell").map(([, d]) => d)].join("\n");
    const needles = [
      "default 30000",
      "block_until_ms to 0",
      "`nohup`",
      "`&`",
      "`disown`",
      "set working_directory instead of",
    ];
    for (const needle of needles) {
      expect(text, needle).to.include(needle);
    }
  });

  it("freezes shared schemas so a run cannot mutate another run's tools", () => {
    const read = assets.catalog.get("Read")!;
    expect(() => {
      (read.parameters as Record<string, unknown>).additionalProperties = false;
    }).to.throw(TypeError);
    expect(agent!.tools.find((t) => t.name === "Read")).to.equal(read);
  });
});

describe("prompt assets: validation at load", () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "prompt-assets-"));
    cpSync(PROMPT_DIR, dir, { recursive: true });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const catalogFile = () => join(dir, "tools.json");
  const readCatalog = () => JSON.parse(readFileSync(catalogFile(), "utf8")) as Array<Record<string, unknown>>;
  const writeCatalog = (tools: unknown) => writeFileSync(catalogFile(), JSON.stringify(tools));
  const property = (tool: Record<string, unknown>, name: string) =>
    ((tool.parameters as Record<string, unknown>).properties as Record<string, Record<string, unknown>>)[name];
  const editTool = (name: string, edit: (tool: Record<string, unknown>) => void) => {
    const tools = readCatalog();
    edit(tools.find((t) => t.name === name)!);
    writeCatalog(tools);
  };

  function expectLoadError(file: string, ...fragments: string[]): void {
    let error: unknown;
    try {
      loadPromptAssets(dir);
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(PromptAssetError);
    const message = (error as PromptAssetError).message;
    expect(message).to.include(join(dir, file));
    for (const fragment of fragments) expect(message).to.include(fragment);
  }

  it("accepts the unmodified copy", () => {
    expect(loadPromptAssets(dir).modes.get("agent")!.tools).to.have.length(AGENT_TOOLS.length);
  });

  it("rejects a missing prompt.md", () => {
    unlinkSync(join(dir, "agent", "prompt.md"));
    expectLoadError("agent/prompt.md", "missing");
  });

  it("rejects an empty prompt.md", () => {
    writeFileSync(join(dir, "agent", "prompt.md"), "\n  \n");
    expectLoadError("agent/prompt.md", "empty");
  });

  it("rejects a missing runtime.md", () => {
    unlinkSync(join(dir, "agent", "runtime.md"));
    expectLoadError("agent/runtime.md", "missing");
  });

  it("rejects a missing manifest", () => {
    unlinkSync(join(dir, "modes", "agent.json"));
    expectLoadError("modes/agent.json", "missing");
  });

  it("rejects a manifest for a mode the code does not know", () => {
    writeFileSync(join(dir, "modes", "bogus.json"), "[]");
    expectLoadError("modes/bogus.json", '"bogus" is not a known mode');
  });

  it("rejects a manifest naming a tool that is not in the catalog", () => {
    writeFileSync(join(dir, "modes", "agent.json"), JSON.stringify([...AGENT_TOOLS, "Teleport"]));
    expectLoadError("modes/agent.json", '"Teleport" is not in tools.json');
  });

  it("rejects a manifest listing a tool twice", () => {
    writeFileSync(join(dir, "modes", "agent.json"), JSON.stringify([...AGENT_TOOLS, "Read"]));
    expectLoadError("modes/agent.json", 'duplicate tool name "Read"');
  });

  it("rejects duplicate tool names in the catalog", () => {
    const tools = readCatalog();
    writeCatalog([...tools, { ...tools[0] }]);
    expectLoadError("tools.json", 'duplicate tool name "Read"');
  });

  it("rejects a catalog that is not valid JSON", () => {
    writeFileSync(catalogFile(), "[{");
    expectLoadError("tools.json", "not valid JSON");
  });

  it("rejects a catalog entry without a description", () => {
    editTool("Grep", (t) => delete t.description);
    expectLoadError("tools.json", 'tool "Grep"', "description");
  });

  it("rejects a catalog entry with a blank description", () => {
    editTool("Grep", (t) => (t.description = "   "));
    expectLoadError("tools.json", 'tool "Grep"', "description");
  });

  it("rejects an empty property description", () => {
    editTool("Read", (t) => (property(t, "path").description = ""));
    expectLoadError("tools.json", "Read.parameters.properties.path.description");
  });

  it("rejects a non-object parameter schema", () => {
    editTool("Glob", (t) => (t.parameters = ["glob_pattern"]));
    expectLoadError("tools.json", 'tool "Glob"', "parameters must be a JSON object");
  });

  it('rejects a parameter schema without type "object"', () => {
    editTool("Glob", (t) => delete (t.parameters as Record<string, unknown>).type);
    expectLoadError("tools.json", 'tool "Glob"', 'parameters.type must be "object"');
  });

  it("rejects a required property that is not declared in properties", () => {
    editTool("Write", (t) => ((t.parameters as Record<string, unknown>).required = ["path", "content"]));
    expectLoadError("tools.json", "Write.parameters", 'required property "content" is not declared');
  });

  it("rejects an undeclared required property in a nested object schema", () => {
    editTool("Shell", (t) => (property(t, "notify_on_output").required = ["pattern", "reasons"]));
    expectLoadError("tools.json", "Shell.parameters.properties.notify_on_output", '"reasons"');
  });

  it("rejects a runtime.md without {{TIMESTAMP}}", () => {
    writeFileSync(join(dir, "agent", "runtime.md"), "<user_query>\n{{USER_QUERY}}\n</user_query>\n");
    expectLoadError("agent/runtime.md", "{{TIMESTAMP}} is missing");
  });

  it("rejects a runtime.md without {{USER_QUERY}}", () => {
    writeFileSync(join(dir, "agent", "runtime.md"), "<timestamp>{{TIMESTAMP}}</timestamp>\n");
    expectLoadError("agent/runtime.md", "{{USER_QUERY}} is missing");
  });

  it("rejects an unknown placeholder in runtime.md", () => {
    const template = readFileSync(join(dir, "agent", "runtime.md"), "utf8");
    writeFileSync(join(dir, "agent", "runtime.md"), `${template}\n{{RECENT_FILES}}\n`);
    expectLoadError("agent/runtime.md", "unknown placeholder {{RECENT_FILES}}");
  });
});

describe("prompt assets: toolSchemaDigest", () => {
  const tools = loadPromptAssets().modes.get("agent")!.tools;
  const clone = (): ToolDefinition[] => JSON.parse(JSON.stringify(tools)) as ToolDefinition[];

  it("is a sha256 hex digest and the same for the same tools", () => {
    expect(toolSchemaDigest(tools)).to.match(/^[0-9a-f]{64}$/);
    expect(toolSchemaDigest(clone())).to.equal(toolSchemaDigest(tools));
  });

  it("does not depend on object key order", () => {
    const reordered = clone().map((t) => ({ parameters: t.parameters, description: t.description, name: t.name }));
    expect(toolSchemaDigest(reordered)).to.equal(toolSchemaDigest(tools));
  });

  it("changes when a description changes", () => {
    const changed = clone();
    changed[4].description += " ";
    expect(toolSchemaDigest(changed)).to.not.equal(toolSchemaDigest(tools));
  });

  it("changes when the tool order changes", () => {
    expect(toolSchemaDigest(clone().reverse())).to.not.equal(toolSchemaDigest(tools));
  });

  it("hashes the canonical JSON of the ordered list", () => {
    const one: ToolDefinition[] = [{ name: "T", description: "d", parameters: { type: "object", a: [2, 1] } }];
    // Canonical form: sorted keys, no whitespace.
    const expected = '[{"description":"d","name":"T","parameters":{"a":[2,1],"type":"object"}}]';
    expect(toolSchemaDigest(one)).to.equal(createHash("sha256").update(expected).digest("hex"));
  });
});
