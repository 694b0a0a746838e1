import { expect } from "chai";
import fc from "fast-check";
import { loadPromptAssets } from "../../prompt/assets.js";
import {
  formatRequestContext,
  renderRuntime,
  runtimeTemplateProblems,
  type RuntimeValues,
} from "../../prompt/render.js";

const template = loadPromptAssets().modes.get("agent")!.runtimeTemplate;
const minimal: RuntimeValues = { timestamp: "2026-12-02T10:00:00Z", userQuery: "fix the build" };

/** Tags in the output whose body is empty or only whitespace, e.g. `<open_files>\n</open_files>`. */
function emptyTags(text: string): string[] {
  return [...text.matchAll(/<([a-z_]+)>\s*<\/\1>/g)].map(([tag]) => tag);
}

describe("prompt render: renderRuntime on the agent template", () => {
  it("renders only timestamp and user query when the request carries nothing else", () => {
    expect(renderRuntime(template, minimal)).to.equal(
      "<timestamp>2026-12-02T10:00:00Z</timestamp>\n\n<user_query>\nfix the build\n</user_query>",
    );
  });

  it("renders every section, in template order, when all are present", () => {
    const out = renderRuntime(template, {
      ...minimal,
      requestContext: "<user_info>\nOS: linux\n</user_info>",
      openFiles: "src/a.ts",
      selectedContext: "lines 1-3 of src/b.ts",
      actionContext: "<background_task>done</background_task>",
    });
    expect(out).to.equal(
      [
        "<user_info>\nOS: linux\n</user_info>",
        "<open_files>\nsrc/a.ts\n</open_files>",
        "<selected_context>\nlines 1-3 of src/b.ts\n</selected_context>",
        "<background_task>done</background_task>",
        "<timestamp>2026-12-02T10:00:00Z</timestamp>",
        "<user_query>\nfix the build\n</user_query>",
      ].join("\n\n"),
    );
  });

  it("treats whitespace-only optional values as absent", () => {
    const out = renderRuntime(template, { ...minimal, openFiles: " \n ", requestContext: "" });
    expect(out).to.equal(renderRuntime(template, minimal));
  });

  it("never leaves empty tags, blank-line runs or leading/trailing blank lines for any absent section", () => {
    const optional = fc.option(fc.constantFrom("x", "line one\nline two"), { nil: undefined });
    fc.assert(
      fc.property(
        optional,
        optional,
        optional,
        optional,
        (requestContext, openFiles, selectedContext, actionContext) => {
          const out = renderRuntime(template, {
            ...minimal,
            requestContext,
            openFiles,
            selectedContext,
            actionContext,
          });
          expect(emptyTags(out)).to.deep.equal([]);
          expect(out).to.not.match(/\n\s*\n\s*\n/);
          expect(out).to.not.match(/^\s|\s$/);
        },
      ),
    );
  });

  it("is single-pass: placeholders inside user text stay literal", () => {
    const userQuery = "why does {{TIMESTAMP}} show up, and {{OPEN_FILES}}?";
    const out = renderRuntime(template, { ...minimal, userQuery, openFiles: "{{USER_QUERY}}" });
    expect(out).to.include(`<user_query>\n${userQuery}\n</user_query>`);
    expect(out).to.include("<open_files>\n{{USER_QUERY}}\n</open_files>");
    expect(out.match(/2026-12-02T10:00:00Z/g)).to.have.length(1);
  });

  it("keeps replacement patterns like $& and $1 in user text literal", () => {
    const out = renderRuntime(template, { ...minimal, userQuery: "cost is $& or $1 or $$" });
    expect(out).to.include("cost is $& or $1 or $$");
  });

  it("keeps blank lines inside user text untouched", () => {
    const userQuery = "first\n\n\n\nlast";
    expect(renderRuntime(template, { ...minimal, userQuery })).to.include(`<user_query>\n${userQuery}\n</user_query>`);
  });

  it("is deterministic for the same values", () => {
    const values = { ...minimal, openFiles: "a.ts" };
    expect(renderRuntime(template, values)).to.equal(renderRuntime(template, values));
  });
});

describe("prompt render: templates", () => {
  it("accepts the agent template", () => {
    expect(runtimeTemplateProblems(template)).to.deep.equal([]);
  });

  it("drops a line holding only an absent placeholder inside a kept paragraph", () => {
    const t = "<ctx>\n{{OPEN_FILES}}\n{{SELECTED_CONTEXT}}\n</ctx>\n\n{{TIMESTAMP}} {{USER_QUERY}}";
    expect(renderRuntime(t, { ...minimal, selectedContext: "sel" })).to.equal(
      "<ctx>\nsel\n</ctx>\n\n2026-12-02T10:00:00Z fix the build",
    );
  });

  it("accepts CRLF templates and renders LF", () => {
    const t = "{{OPEN_FILES}}\r\n\r\n{{TIMESTAMP}}\r\n{{USER_QUERY}}\r\n";
    expect(renderRuntime(t, minimal)).to.equal("2026-12-02T10:00:00Z\nfix the build");
  });

  it("reports unknown, repeated and missing placeholders and stray braces", () => {
    expect(runtimeTemplateProblems("{{TIMESTAMP}} {{USER_QUERY}} {{timestamp}}")[0]).to.include(
      "unknown placeholder {{timestamp}}",
    );
    expect(runtimeTemplateProblems("{{TIMESTAMP}} {{USER_QUERY}} {{USER_QUERY}}")[0]).to.include(
      "{{USER_QUERY}} appears more than once",
    );
    expect(runtimeTemplateProblems("{{TIMESTAMP}} {{USER_QUERY}} {{OPEN_FILES}")[0]).to.include("unbalanced");
    expect(runtimeTemplateProblems("{{USER_QUERY}}")).to.deep.equal(["required placeholder {{TIMESTAMP}} is missing"]);
  });

  it("refuses to render an invalid template", () => {
    expect(() => renderRuntime("{{USER_QUERY}} {{NOPE}}", minimal)).to.throw(/unknown placeholder \{\{NOPE\}\}/);
  });
});

describe("prompt render: formatRequestContext", () => {
  it("renders user_info, git_status and rules in that order", () => {
    const out = formatRequestContext({
      rules: ["Use tabs.", "Answer in English.\n"],
      gitStatus: "## main\n M src/a.ts\n",
      timeZone: "Europe/Berlin",
      terminalsFolder: "/home/u/.cursor/terminals",
      workspacePaths: ["/home/u/project"],
      shell: "/bin/zsh",
      os: "linux 6.1",
    });
    expect(out).to.equal(
      [
        "<user_info>",
        "OS: linux 6.1",
        "Shell: /bin/zsh",
        "Workspace path: /home/u/project",
        "Terminals folder (output of backgrounded shell commands): /home/u/.cursor/terminals",
        "Time zone: Europe/Berlin",
        "</user_info>",
        "",
        "<git_status>",
        "## main",
        " M src/a.ts",
        "</git_status>",
        "",
        "<rules>",
        "<rule>\nUse tabs.\n</rule>",
        "<rule>\nAnswer in English.\n</rule>",
        "</rules>",
      ].join("\n"),
    );
  });

  it("lists several workspace paths one per line", () => {
    expect(formatRequestContext({ workspacePaths: ["/a", "/b"] })).to.equal(
      "<user_info>\nWorkspace paths:\n- /a\n- /b\n</user_info>",
    );
  });

  it("renders only the parts present", () => {
    expect(formatRequestContext({ gitStatus: "clean" })).to.equal("<git_status>\nclean\n</git_status>");
    expect(formatRequestContext({ rules: ["r"] })).to.equal("<rules>\n<rule>\nr\n</rule>\n</rules>");
  });

  it("renders nothing at all for an empty context", () => {
    expect(formatRequestContext({})).to.equal("");
    expect(formatRequestContext({ workspacePaths: [], rules: ["", "  "], gitStatus: " \n", os: "" })).to.equal("");
  });

  it("plugs into the runtime template without leaving an empty section", () => {
    const out = renderRuntime(template, { ...minimal, requestContext: formatRequestContext({}) });
    expect(out).to.equal(renderRuntime(template, minimal));
  });
});
