// Provider schema acceptance (docs/protocol/cursor-tools.md §6.6): every mode's whole manifest goes through each
// adapter's request builder, and each tool comes out in the shape its endpoint takes — the function shape the
// recorded Responses streams echo back, Chat Completions' function tools, Anthropic's input_schema — with a
// schema inside the JSON Schema subset the three accept, and never claiming OpenAI's strict mode it cannot meet.
import { expect } from "chai";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { projectAnthropicRequest } from "../../providers/anthropic.js";
import { projectChatRequest } from "../../providers/openai-chat.js";
import { projectResponsesRequest } from "../../providers/openai-responses.js";
import type { ModelRequest } from "../../providers/types.js";
import { loadPromptAssets, MODE_IDS, type ToolDefinition } from "../../prompt/assets.js";

const assets = loadPromptAssets();
const RESPONSES_DIR = fileURLToPath(new URL("../fixtures/providers/openai-responses/", import.meta.url));

/** The tool keys the Responses API echoed in the recorded streams' response.created (the request as accepted). */
function recordedResponsesToolKeys(): string[][] {
  const shapes: string[][] = [];
  for (const file of readdirSync(RESPONSES_DIR).filter((f) => f.endsWith(".sse"))) {
    for (const line of readFileSync(RESPONSES_DIR + file, "utf8").split("\n")) {
      if (!line.startsWith("data: ") || !line.includes('"response.created"')) continue;
      const tools = (JSON.parse(line.slice(6)) as { response: { tools?: Array<Record<string, unknown>> } }).response
        .tools;
      for (const tool of tools ?? []) if (tool.type === "function") shapes.push(Object.keys(tool).sort());
    }
  }
  return shapes;
}

// The keywords our schemas may use: the subset OpenAI function calling and Anthropic tool input schemas both take.
const KEYWORDS = new Set([
  ...["type", "properties", "required", "items", "enum", "description", "minItems", "minimum", "minLength"],
]);
const TYPES = new Set(["object", "string", "integer", "number", "boolean", "array"]);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Every reason a schema node falls outside the accepted subset, with its path. */
function schemaProblems(node: Record<string, unknown>, at: string): string[] {
  const problems = Object.keys(node)
    .filter((k) => !KEYWORDS.has(k))
    .map((k) => `${at}: keyword "${k}"`);
  if (!TYPES.has(node.type as string)) problems.push(`${at}: type ${JSON.stringify(node.type)}`);
  const props = (node.properties ?? {}) as Record<string, Record<string, unknown>>;
  for (const name of (node.required ?? []) as string[])
    if (!Object.hasOwn(props, name)) problems.push(`${at}: required "${name}" undeclared`);
  if (node.type === "array" && node.items === undefined) problems.push(`${at}: array without items`);
  if (node.enum !== undefined && !(node.enum as unknown[]).every((v) => typeof v === node.type))
    problems.push(`${at}: enum values are not all ${String(node.type)}`);
  for (const [name, sub] of Object.entries(props)) problems.push(...schemaProblems(sub, `${at}.${name}`));
  if (node.items) problems.push(...schemaProblems(node.items as Record<string, unknown>, `${at}[]`));
  return problems;
}

/** OpenAI strict mode: every object closes with additionalProperties false and requires all of its properties. */
function meetsStrictMode(node: Record<string, unknown>): boolean {
  const props = (node.properties ?? {}) as Record<string, Record<string, unknown>>;
  if (node.type === "object") {
    const required = new Set((node.required ?? []) as string[]);
    if (node.additionalProperties !== false || Object.keys(props).some((p) => !required.has(p))) return false;
  }
  const children = [...Object.values(props), ...(node.items ? [node.items as Record<string, unknown>] : [])];
  return children.every(meetsStrictMode);
}

const request = (tools: ToolDefinition[]): ModelRequest => ({
  model: "m",
  system: "s",
  tools,
  messages: [{ role: "user", content: "u" }],
});
const json = (value: unknown) => JSON.stringify(value);

describe("provider schema acceptance: each mode's whole tool list through each adapter", () => {
  it("the recorded Responses streams show one function tool shape", () => {
    const shapes = recordedResponsesToolKeys();
    expect(shapes.length).to.be.greaterThan(0);
    for (const shape of shapes) expect(shape).to.deep.equal(["description", "name", "parameters", "strict", "type"]);
  });

  // The compaction mode has no tools: its requests carry none.
  for (const mode of MODE_IDS.filter((m) => assets.modes.get(m)!.tools.length > 0)) {
    const tools = assets.modes.get(mode)!.tools;

    it(`${mode}: every schema is inside the subset all three endpoints accept, and none meets strict mode`, () => {
      for (const tool of tools) {
        expect(tool.name, tool.name).to.match(NAME);
        expect(schemaProblems(tool.parameters, tool.name), tool.name).to.deep.equal([]);
        expect(tool.parameters.type, tool.name).to.equal("object");
        // Optional arguments are part of every tool: strict mode would reject the schema, so no request claims it.
        expect(meetsStrictMode(tool.parameters), tool.name).to.equal(false);
      }
    });

    it(`${mode}: OpenAI Chat gets function tools in manifest order, schemas byte for byte, never strict`, () => {
      const body = projectChatRequest(request(tools)) as unknown as { tools: Array<Record<string, unknown>> };
      expect(body.tools.map((t) => (t.function as { name: string }).name)).to.deep.equal(tools.map((t) => t.name));
      body.tools.forEach((t, i) => {
        expect(Object.keys(t)).to.deep.equal(["type", "function"]);
        expect(t.type).to.equal("function");
        expect(Object.keys(t.function as object)).to.deep.equal(["name", "description", "parameters"]);
        expect(json((t.function as { parameters: unknown }).parameters)).to.equal(json(tools[i]!.parameters));
      });
    });

    it(`${mode}: OpenAI Responses gets the recorded function shape with strict false`, () => {
      const body = projectResponsesRequest(request(tools)) as unknown as { tools: Array<Record<string, unknown>> };
      expect(body.tools.map((t) => t.name)).to.deep.equal(tools.map((t) => t.name));
      body.tools.forEach((t, i) => {
        expect(Object.keys(t).sort()).to.deep.equal(["description", "name", "parameters", "strict", "type"]);
        expect(t).to.deep.include({ type: "function", strict: false });
        expect(json(t.parameters)).to.equal(json(tools[i]!.parameters));
      });
    });

    it(`${mode}: Anthropic gets name, description and an object input_schema`, () => {
      const body = projectAnthropicRequest(request(tools)) as unknown as { tools: Array<Record<string, unknown>> };
      expect(body.tools.map((t) => t.name)).to.deep.equal(tools.map((t) => t.name));
      body.tools.forEach((t, i) => {
        // cache_control is Anthropic's own marker for a prompt-cache breakpoint, allowed on any tool.
        expect(Object.keys(t).filter((k) => k !== "cache_control")).to.deep.equal([
          "name",
          "description",
          "input_schema",
        ]);
        expect(json(t.input_schema)).to.equal(json(tools[i]!.parameters));
      });
    });
  }
});
