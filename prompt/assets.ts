// Mode prompt and tool assets (docs/protocol/cursor-run.md §8.7; docs/protocol/cursor-tools.md §6): one tool catalog,
// one ordered manifest per mode, and per mode a static prompt.md plus a runtime.md template. Everything is loaded and
// validated once at start-up; a broken or missing asset stops the gateway instead of falling back to another mode's
// files.

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ToolDefinition } from "../providers/types.js";
import { runtimeTemplateProblems } from "./render.js";

export type { ToolDefinition };

/** The modes a user picks, which SwitchMode's `target_mode_id` also names (docs/protocol/cursor-tools.md §6). */
export const USER_MODE_IDS = ["agent", "ask", "plan", "debug", "multitask"] as const;
/** Adding a mode = its files under prompt/ plus its id here. The gateway's own modes (a subagent's run, compaction)
 * follow the user's. */
export const MODE_IDS = [...USER_MODE_IDS, "subagent", "compaction"] as const;
export type ModeId = (typeof MODE_IDS)[number];
export type UserModeId = (typeof USER_MODE_IDS)[number];

export function isUserModeId(id: string): id is UserModeId {
  return (USER_MODE_IDS as readonly string[]).includes(id);
}

export function isModeId(id: string): id is ModeId {
  return (MODE_IDS as readonly string[]).includes(id);
}

/** Subagents share the agent's system prompt byte for byte; only their runtime message and tools differ
 * (docs/protocol/cursor-tools.md §6.3). */
const SYSTEM_PROMPT_OF: ReadonlyMap<ModeId, ModeId> = new Map([["subagent", "agent"]]);

export interface ModeAssets {
  mode: ModeId;
  systemPrompt: string;
  runtimeTemplate: string;
  tools: ToolDefinition[];
}

export interface PromptAssets {
  modes: ReadonlyMap<ModeId, ModeAssets>;
  catalog: ReadonlyMap<string, ToolDefinition>;
  /** The reminder appended after each background subagent's completion (docs/protocol/cursor-run.md §13). */
  subagentCompletion: string;
}

/** A missing or malformed prompt asset; the message names the file and what is wrong with it. */
export class PromptAssetError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
    this.name = "PromptAssetError";
  }
}

// Written from one folder below the root, so it names the same folder from the sources and from the dist/ bundle.
const DEFAULT_DIR = fileURLToPath(new URL("../prompt/", import.meta.url));

// The strictest common tool-name rule of the provider endpoints (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const ENTRY_KEYS = ["name", "description", "parameters"];

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readText(file: string): string {
  if (!existsSync(file)) throw new PromptAssetError(file, "missing");
  return readFileSync(file, "utf8").replace(/\r\n?/g, "\n");
}

function readJson(file: string): unknown {
  const text = readText(file);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new PromptAssetError(file, `not valid JSON (${(err as Error).message})`);
  }
}

/** Structural checks on one JSON Schema node; `at` is the path used in messages, e.g. `Shell.parameters`. */
function checkSchema(file: string, schema: unknown, at: string): void {
  if (!isObject(schema)) throw new PromptAssetError(file, `${at} must be a JSON object schema`);
  if ("description" in schema && (typeof schema.description !== "string" || schema.description.trim() === "")) {
    throw new PromptAssetError(file, `${at}.description must be a non-empty string`);
  }
  const { properties, required, items } = schema;
  if (properties !== undefined && !isObject(properties)) {
    throw new PromptAssetError(file, `${at}.properties must be an object`);
  }
  if (required !== undefined) {
    if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) {
      throw new PromptAssetError(file, `${at}.required must be an array of property names`);
    }
    for (const name of required) {
      if (!properties || !Object.hasOwn(properties, name)) {
        throw new PromptAssetError(file, `${at}: required property "${name}" is not declared in properties`);
      }
    }
  }
  for (const [name, sub] of Object.entries(properties ?? {})) checkSchema(file, sub, `${at}.properties.${name}`);
  if (items !== undefined) checkSchema(file, items, `${at}.items`);
}

function toToolDefinition(file: string, entry: unknown, index: number): ToolDefinition {
  if (!isObject(entry)) throw new PromptAssetError(file, `entry ${index} must be an object`);
  const { name, description, parameters } = entry;
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new PromptAssetError(file, `entry ${index}: name must match ${TOOL_NAME} (got ${JSON.stringify(name)})`);
  }
  const extra = Object.keys(entry).filter((k) => !ENTRY_KEYS.includes(k));
  if (extra.length > 0) throw new PromptAssetError(file, `tool "${name}": unexpected keys ${extra.join(", ")}`);
  if (typeof description !== "string" || description.trim() === "") {
    throw new PromptAssetError(file, `tool "${name}": description must be a non-empty string`);
  }
  if (!isObject(parameters)) throw new PromptAssetError(file, `tool "${name}": parameters must be a JSON object`);
  if (parameters.type !== "object") {
    throw new PromptAssetError(file, `tool "${name}": parameters.type must be "object"`);
  }
  checkSchema(file, parameters, `${name}.parameters`);
  return { name, description, parameters };
}

function loadCatalog(dir: string): Map<string, ToolDefinition> {
  const file = join(dir, "tools.json");
  const entries = readJson(file);
  if (!Array.isArray(entries)) throw new PromptAssetError(file, "must be an array of tool definitions");
  const catalog = new Map<string, ToolDefinition>();
  entries.forEach((entry, index) => {
    const tool = toToolDefinition(file, entry, index);
    if (catalog.has(tool.name)) throw new PromptAssetError(file, `duplicate tool name "${tool.name}"`);
    catalog.set(tool.name, deepFreeze(tool));
  });
  return catalog;
}

function loadManifest(dir: string, mode: ModeId, catalog: ReadonlyMap<string, ToolDefinition>): ToolDefinition[] {
  const file = join(dir, "modes", `${mode}.json`);
  const names = readJson(file);
  if (!Array.isArray(names) || !names.every((n) => typeof n === "string")) {
    throw new PromptAssetError(file, "must be an array of tool names");
  }
  const seen = new Set<string>();
  return names.map((name) => {
    if (seen.has(name)) throw new PromptAssetError(file, `duplicate tool name "${name}"`);
    seen.add(name);
    const tool = catalog.get(name);
    if (!tool) throw new PromptAssetError(file, `tool "${name}" is not in tools.json`);
    return tool;
  });
}

// A manifest for a mode the code does not know would be silently ignored; refuse it instead
// (docs/protocol/cursor-run.md §8.7: no aliases).
function checkNoUnknownModes(dir: string): void {
  const modesDir = join(dir, "modes");
  if (!existsSync(modesDir)) return; // the missing manifest itself is reported by loadManifest
  for (const entry of readdirSync(modesDir)) {
    const mode = entry.replace(/\.json$/, "");
    if (entry.endsWith(".json") && !isModeId(mode)) {
      throw new PromptAssetError(join(modesDir, entry), `"${mode}" is not a known mode (${MODE_IDS.join(", ")})`);
    }
  }
}

function loadMode(dir: string, mode: ModeId, catalog: ReadonlyMap<string, ToolDefinition>): ModeAssets {
  const tools = loadManifest(dir, mode, catalog);
  const promptFile = join(dir, SYSTEM_PROMPT_OF.get(mode) ?? mode, "prompt.md");
  const systemPrompt = readText(promptFile).trimEnd();
  if (systemPrompt.trim() === "") throw new PromptAssetError(promptFile, "is empty");
  const runtimeFile = join(dir, mode, "runtime.md");
  const runtimeTemplate = readText(runtimeFile);
  const problems = runtimeTemplateProblems(runtimeTemplate);
  if (problems.length > 0) throw new PromptAssetError(runtimeFile, problems.join("; "));
  return Object.freeze({ mode, systemPrompt, runtimeTemplate, tools: Object.freeze(tools) as ToolDefinition[] });
}

/** Loads and validates every mode's assets from `dir` (default: this folder). Throws PromptAssetError. */
export function loadPromptAssets(dir: string = DEFAULT_DIR): PromptAssets {
  const catalog = loadCatalog(dir);
  checkNoUnknownModes(dir);
  const modes = new Map<ModeId, ModeAssets>(MODE_IDS.map((mode) => [mode, loadMode(dir, mode, catalog)]));
  const completionFile = join(dir, "subagent", "completion.md");
  const subagentCompletion = readText(completionFile).trim();
  if (subagentCompletion === "") throw new PromptAssetError(completionFile, "is empty");
  return { modes, catalog, subagentCompletion };
}

// Assets are shared by every run; freezing them keeps per-turn code from mutating a schema another run replays.
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * SHA-256 (hex) of the canonical JSON (sorted keys, no whitespace) of an ordered tool list. Tool definitions sit
 * at the front of every provider request, so any change here moves the provider's prompt-cache boundary
 * (docs/protocol/cursor-run.md §8.1).
 */
export function toolSchemaDigest(tools: ToolDefinition[]): string {
  const list = tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  return createHash("sha256").update(canonicalJson(list)).digest("hex");
}
