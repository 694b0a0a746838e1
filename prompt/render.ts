// Single-pass rendering of a mode's runtime.md (docs/protocol/cursor-run.md §8.7). The rendered text becomes the one
// runtime-origin user-role message of a RunRequest; it is persisted once and replayed byte-identical
// (docs/protocol/cursor-run.md §8.6), so rendering must be a pure function of the template and the values.

export interface RuntimeValues {
  requestContext?: string;
  openFiles?: string;
  selectedContext?: string;
  actionContext?: string;
  timestamp: string;
  userQuery: string;
}

/** Placeholder name in runtime.md → the RuntimeValues field it is filled from. */
const PLACEHOLDER_FIELDS = {
  REQUEST_CONTEXT: "requestContext",
  OPEN_FILES: "openFiles",
  SELECTED_CONTEXT: "selectedContext",
  ACTION_CONTEXT: "actionContext",
  TIMESTAMP: "timestamp",
  USER_QUERY: "userQuery",
} as const satisfies Record<string, keyof RuntimeValues>;

type PlaceholderName = keyof typeof PLACEHOLDER_FIELDS;

/** docs/protocol/cursor-run.md §8.7: every template must carry these two; all other sections depend on the current
 * RunRequest. */
const REQUIRED_PLACEHOLDERS: readonly PlaceholderName[] = ["TIMESTAMP", "USER_QUERY"];

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

function isPlaceholderName(name: string): name is PlaceholderName {
  return Object.hasOwn(PLACEHOLDER_FIELDS, name);
}

/** Everything wrong with a runtime template, as readable sentences; empty when it is usable. */
export function runtimeTemplateProblems(template: string): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [token, name] of template.matchAll(PLACEHOLDER)) {
    if (!isPlaceholderName(name)) {
      problems.push(`unknown placeholder ${token} (known: ${Object.keys(PLACEHOLDER_FIELDS).join(", ")})`);
    } else if (seen.has(name)) {
      problems.push(`placeholder ${token} appears more than once`);
    }
    seen.add(name);
  }
  if (/\{\{|\}\}/.test(template.replace(PLACEHOLDER, ""))) {
    problems.push("unbalanced '{{' or '}}' outside a placeholder");
  }
  for (const name of REQUIRED_PLACEHOLDERS) {
    if (!seen.has(name)) problems.push(`required placeholder {{${name}}} is missing`);
  }
  return problems;
}

function valueFor(name: PlaceholderName, values: RuntimeValues): string {
  return values[PLACEHOLDER_FIELDS[name]] ?? "";
}

/** docs/protocol/cursor-run.md §8.7: an optional section with no data renders as nothing (never as an empty tag or
 * filler text). */
function isAbsent(name: PlaceholderName, values: RuntimeValues): boolean {
  return !REQUIRED_PLACEHOLDERS.includes(name) && valueFor(name, values).trim() === "";
}

function placeholdersIn(text: string): PlaceholderName[] {
  return [...text.matchAll(PLACEHOLDER)].map(([, name]) => name).filter(isPlaceholderName);
}

function isAbsentPlaceholderLine(line: string, values: RuntimeValues): boolean {
  const names = placeholdersIn(line);
  return names.length > 0 && line.replace(PLACEHOLDER, "").trim() === "" && names.every((n) => isAbsent(n, values));
}

// A paragraph (blank-line separated block of the template) whose placeholders are all absent is dropped with the
// tags around them; inside a kept paragraph, a line holding only absent placeholders is dropped.
function renderParagraph(paragraph: string, values: RuntimeValues): string | undefined {
  const names = placeholdersIn(paragraph);
  if (names.length > 0 && names.every((n) => isAbsent(n, values))) return undefined;
  return (
    paragraph
      .split("\n")
      .filter((line) => !isAbsentPlaceholderLine(line, values))
      // One replace call over the template text: substituted values are never scanned again, and a replacer
      // function keeps `$&`-style sequences in user text literal.
      .map((line) => line.replace(PLACEHOLDER, (_token, name: string) => valueFor(name as PlaceholderName, values)))
      .join("\n")
  );
}

/**
 * Renders a runtime template in one pass. Paragraphs are joined by exactly one blank line; the result has no
 * leading or trailing blank lines. Throws when the template itself is invalid (assets are validated at load, so
 * this only guards direct callers).
 */
export function renderRuntime(template: string, values: RuntimeValues): string {
  const problems = runtimeTemplateProblems(template);
  if (problems.length > 0) throw new Error(`invalid runtime template: ${problems.join("; ")}`);
  return template
    .replace(/\r\n?/g, "\n")
    .split(/\n[ \t]*\n/)
    .map((p) => p.replace(/^\n+|\n+$/g, ""))
    .filter((p) => p.trim() !== "")
    .map((p) => renderParagraph(p, values))
    .filter((p): p is string => p !== undefined)
    .join("\n\n");
}

export interface RequestContextParts {
  os?: string;
  shell?: string;
  workspacePaths?: string[];
  terminalsFolder?: string;
  timeZone?: string;
  gitStatus?: string;
  rules?: string[];
  /** Skills and subagents the model may use, as one "name or path: description" line each. */
  skills?: string[];
  subagents?: string[];
  mcpInstructions?: Array<{ server: string; instructions: string }>;
}

function present(text: string | undefined): text is string {
  return text !== undefined && text.trim() !== "";
}

function userInfoLines(ctx: RequestContextParts): string[] {
  const lines: string[] = [];
  if (present(ctx.os)) lines.push(`OS: ${ctx.os}`);
  if (present(ctx.shell)) lines.push(`Shell: ${ctx.shell}`);
  const workspaces = (ctx.workspacePaths ?? []).filter(present);
  if (workspaces.length === 1) lines.push(`Workspace path: ${workspaces[0]}`);
  if (workspaces.length > 1) lines.push("Workspace paths:", ...workspaces.map((p) => `- ${p}`));
  // docs/protocol/cursor-tools.md §5.5: the model must know where backgrounded shells keep writing their output.
  if (present(ctx.terminalsFolder)) {
    lines.push(`Terminals folder (output of backgrounded shell commands): ${ctx.terminalsFolder}`);
  }
  if (present(ctx.timeZone)) lines.push(`Time zone: ${ctx.timeZone}`);
  return lines;
}

function tagged(tag: string, body: string): string {
  return `<${tag}>\n${body}\n</${tag}>`;
}

/** The request context section (docs/protocol/cursor-run.md §8.7 order: user_info → git_status → rules → skills →
 * subagents → MCP); only the parts present. */
export function formatRequestContext(ctx: RequestContextParts): string {
  const sections: string[] = [];
  const userInfo = userInfoLines(ctx);
  if (userInfo.length > 0) sections.push(tagged("user_info", userInfo.join("\n")));
  if (present(ctx.gitStatus)) sections.push(tagged("git_status", ctx.gitStatus.replace(/\n+$/, "")));
  const rules = (ctx.rules ?? []).filter(present).map((rule) => tagged("rule", rule.replace(/\n+$/, "")));
  if (rules.length > 0) sections.push(tagged("rules", rules.join("\n")));
  const skills = (ctx.skills ?? []).filter(present);
  if (skills.length > 0) sections.push(tagged("skills", skills.map((l) => `- ${l}`).join("\n")));
  const subagents = (ctx.subagents ?? []).filter(present);
  if (subagents.length > 0) sections.push(tagged("subagents", subagents.map((l) => `- ${l}`).join("\n")));
  const mcp = (ctx.mcpInstructions ?? []).filter((m) => present(m.instructions));
  if (mcp.length > 0) {
    const blocks = mcp.map(
      (m) => `<server name=${JSON.stringify(m.server)}>\n${m.instructions.replace(/\n+$/, "")}\n</server>`,
    );
    sections.push(tagged("mcp_instructions", blocks.join("\n")));
  }
  return sections.join("\n\n");
}
