// Wire-level: everything the user attached reaches the model (docs/protocol/cursor-run.md §2.3, §2.6, §8.7, §8.8). One
// gateway, one model per endpoint kind; a user message carrying every text attachment kind (some inline, some by blob
// id: pre-fetched, stored, or fetched with get_blob_args) and a request context with git status, skills, subagents and
// MCP instructions. The recorded provider request must hold the documented layout byte for byte, the next turn's
// request must start with this one's, and bad blobs and wrong hashes fail the run with invalid_argument (images:
// images.test.ts).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobId } from "../../cursor/blob-graph.js";
import {
  type AgentRunRequest,
  PreFetchedBlobSchema,
  type RequestContextSchema,
  SelectedContextSchema,
  type UserMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { sha256Hex } from "../support/client-responder.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type FakeOpenAIResponses, startFakeOpenAIResponses } from "../support/fake-openai-responses.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";

const utf8 = (s: string) => new TextEncoder().encode(s);
// Blob contents name the endpoint: each test's blobs are new to the gateway's store, so it must fetch them.
const LONG_QUERY = (e: string) => `explain the attached change, in full (this text came by text_blob_id to ${e})`;
const PR_DIFF = (e: string) => `@@ -1 +1 @@\n-old\n+${e}\n`;
const PRE_FETCHED = (e: string) => `context the client pre-fetched for ${e}`;
const STORED_ELSEWHERE = (e: string) => `a pull request summary by blob for ${e}`;

/** Every text attachment kind, in the order the layout renders them. */
function selectedContext(ids: { prDiff: Uint8Array; preFetched: Uint8Array; summary: Uint8Array }) {
  const range = (a: number, b: number) => ({ start: { line: a, column: 1 }, end: { line: b, column: 1 } });
  return create(SelectedContextSchema, {
    files: [{ path: "/w/src/a.ts", relativePath: "src/a.ts", content: "export const a = 1;\n" }],
    folders: [
      {
        path: "/w/src",
        relativePath: "src",
        directoryTree: {
          absPath: "/w/src",
          childrenDirs: [{ absPath: "/w/src/lib" }],
          childrenFiles: [{ name: "a.ts" }],
        },
      },
    ],
    codeSelections: [{ path: "/w/src/b.ts", relativePath: "src/b.ts", content: "let b = 2;", range: range(3, 4) }],
    terminals: [{ title: "zsh", content: "$ npm test\nok" }],
    terminalSelections: [{ title: "zsh", content: "ok", range: range(2, 2) }],
    gitDiff: { content: "diff --git a/x b/x" },
    gitDiffFromBranchToMain: { content: "diff --git a/y b/y" },
    gitCommits: [{ sha: "abc123", message: "fix: y", diff: "+y" }],
    gitPrDiffSelections: [
      { prUrl: "https://git.example/pr/7", filePath: "x.ts", startLine: 1, endLine: 9, blobId: ids.prDiff },
    ],
    selectedPullRequests: [{ number: 7, url: "https://git.example/pr/7", title: "Fix y", blobId: ids.summary }],
    externalLinks: [{ url: "https://docs.example/page", pdfContent: "page text" }],
    documentations: [{ docId: "d1", name: "Node docs" }],
    pastChats: [{ agentId: "chat-1", name: "earlier chat" }],
    cursorRules: [{ rule: { fullPath: ".cursor/rules/style.mdc", content: "use tabs" } }],
    cursorCommands: [{ name: "review", content: "review this" }],
    extraContext: ["extra words"],
    extraContextEntries: [{ dataOrBlobId: { case: "blobId", value: ids.preFetched } }],
  });
}

/** The documented layout (docs/protocol/cursor-run.md §8.8) of the context above. */
const EXPECTED_SELECTED = (e: string) => `<selected_context>
<file path="src/a.ts">
export const a = 1;
</file>
<folder path="src">
/w/src/
  lib/
  a.ts
</folder>
<code_selection path="src/b.ts" lines="3-4">
let b = 2;
</code_selection>
<terminal title="zsh">
$ npm test
ok
</terminal>
<terminal_selection title="zsh" lines="2-2">
ok
</terminal_selection>
<git_diff of="working tree">
diff --git a/x b/x
</git_diff>
<git_diff of="branch against main">
diff --git a/y b/y
</git_diff>
<git_commit sha="abc123">
fix: y

+y
</git_commit>
<pr_diff url="https://git.example/pr/7" path="x.ts" lines="1-9">
@@ -1 +1 @@
-old
+${e}
</pr_diff>
<pull_request number="7" url="https://git.example/pr/7" title="Fix y">
${STORED_ELSEWHERE(e)}
</pull_request>
<link url="https://docs.example/page">
page text
</link>
<documentation name="Node docs" id="d1" />
<past_chat name="earlier chat" id="chat-1" />
<cursor_rule path=".cursor/rules/style.mdc">
use tabs
</cursor_rule>
<cursor_command name="review">
review this
</cursor_command>
<extra_context>
extra words
</extra_context>
<extra_context>
${PRE_FETCHED(e)}
</extra_context>
</selected_context>`;

const requestContext: MessageInitShape<typeof RequestContextSchema> = {
  env: { osVersion: "linux", shell: "zsh", workspacePaths: ["/w"] },
  gitRepos: [{ path: "/w", branchName: "main", status: "M src/a.ts" }],
  rules: [{ fullPath: "r", content: "be brief" }],
  agentSkills: [{ fullPath: "skills/pdf/SKILL.md", description: "read PDFs" }],
  customSubagents: [{ name: "reviewer", description: "reviews diffs" }],
  mcpInstructions: [{ serverName: "docs", instructions: "query docs first" }],
};

const EXPECTED_CONTEXT = `<user_info>
OS: linux
Shell: zsh
Workspace path: /w
</user_info>

<git_status>
Repository: /w
Branch: main
M src/a.ts
</git_status>

<rules>
<rule>
be brief
</rule>
</rules>

<skills>
- skills/pdf/SKILL.md: read PDFs
</skills>

<subagents>
- reviewer: reviews diffs
</subagents>

<mcp_instructions>
<server name="docs">
query docs first
</server>
</mcp_instructions>`;

/** The JSON-escaped form of `text`, as it appears inside any provider body. */
const inJson = (text: string) => JSON.stringify(text).slice(1, -1);

function userMessageOf(r: AgentRunRequest): UserMessage {
  const action = r.action?.action;
  if (action?.case !== "userMessageAction" || !action.value.userMessage) throw new Error("not a user message run");
  return action.value.userMessage;
}

type Endpoint = "openai-chat" | "openai-responses" | "anthropic";

describe("e2e: attachments and request context reach the model", function () {
  this.timeout(30_000);
  let chat: FakeOpenAI;
  let responses: FakeOpenAIResponses;
  let anthropic: FakeAnthropic;
  let gw: GatewayProcess;
  let dataDir: string;

  before(async () => {
    [chat, responses, anthropic] = await Promise.all([
      startFakeOpenAI(),
      startFakeOpenAIResponses(),
      startFakeAnthropic(),
    ]);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-attach-"));
    const model = (id: Endpoint, baseUrl: string) => ({
      id,
      provider: id,
      baseUrl,
      apiKey: "sk-e2e-attach",
      model: id,
    });
    gw = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          model("openai-chat", chat.baseUrl),
          model("openai-responses", responses.baseUrl),
          model("anthropic", anthropic.baseUrl),
        ],
      },
      upstream: "http://127.0.0.1:9",
    });
  });
  after(async () => {
    await killAllGateways();
    await Promise.all([chat?.close(), responses?.close(), anthropic?.close()]);
    await rm(dataDir, { recursive: true, force: true });
  });

  const fakes = {
    "openai-chat": {
      reply: (text: string) => chat.enqueue({ text }),
      bodies: () => chat.requests.map((r) => r.body),
      history: (b: { messages: unknown[] }) => b.messages,
    },
    "openai-responses": {
      reply: (text: string) => responses.enqueue({ text }),
      bodies: () => responses.requests.map((r) => r.body),
      history: (b: { input: unknown[] }) => b.input,
    },
    anthropic: {
      reply: (text: string) => anthropic.enqueue({ blocks: [{ type: "text", text }] }),
      bodies: () => anthropic.messageRequests().map((r) => r.body),
      history: (b: { messages: unknown[] }) => b.messages,
    },
  } as const;

  for (const endpoint of ["openai-chat", "openai-responses", "anthropic"] as const) {
    it(`${endpoint}: every attachment kind, rendered in the documented layout, prefix-stable on the next turn`, async () => {
      const fake = fakes[endpoint];
      const client = new CursorClient(gw.url);
      // Three ways a blob arrives: pre-fetched in the request, already held by the client (fetched with
      // get_blob_args), and the long text of the message itself.
      const prDiff = utf8(PR_DIFF(endpoint));
      const summary = utf8(STORED_ELSEWHERE(endpoint));
      const text = utf8(LONG_QUERY(endpoint));
      for (const b of [prDiff, summary, text]) client.putBlob(b);
      const preFetched = utf8(PRE_FETCHED(endpoint));
      const ids = { prDiff: blobId(prDiff), preFetched: blobId(preFetched), summary: blobId(summary) };
      const conversationId = `attach-${endpoint}-${randomUUID()}`;
      fake.reply("first answer");
      const run = client.startRun({
        conversationId,
        modelId: endpoint,
        text: "explain the attached change",
        requestContext,
        customize: (r: AgentRunRequest) => {
          const userMessage = userMessageOf(r);
          userMessage.selectedContext = selectedContext(ids);
          userMessage.textBlobId = blobId(text);
          r.preFetchedBlobs = [create(PreFetchedBlobSchema, { id: ids.preFetched, value: preFetched })];
        },
      });
      expect(await run.done).to.deep.equal({ ok: true });
      const fetched = run.kvLog.filter((k) => k.case === "getBlobArgs").map((k) => k.blobId);
      expect(fetched.sort()).to.deep.equal([sha256Hex(prDiff), sha256Hex(summary), sha256Hex(text)].sort());

      const [first] = fake.bodies();
      const body = JSON.stringify(first);
      expect(body).to.include(inJson(EXPECTED_SELECTED(endpoint)));
      expect(body).to.include(inJson(EXPECTED_CONTEXT));
      expect(body).to.include(inJson(`<user_query>\n${LONG_QUERY(endpoint)}\n</user_query>`));

      // The checkpoint's context breakdown counts the request context's sections in their own categories.
      const categories = new Map(
        run.lastCheckpoint()!.tokenDetails!.breakdown!.categories.map((c) => [c.id, c.characterCount]),
      );
      expect(
        Object.fromEntries(["rules", "skills", "mcp", "subagents"].map((id) => [id, categories.get(id)])),
      ).to.deep.equal({
        rules: "<rule>\nbe brief\n</rule>".length,
        skills: "- skills/pdf/SKILL.md: read PDFs".length,
        mcp: '<server name="docs">\nquery docs first\n</server>'.length,
        subagents: "- reviewer: reviews diffs".length,
      });

      fake.reply("second answer");
      const next = client.startRun({
        conversationId,
        modelId: endpoint,
        text: "and now?",
        checkpoint: run.lastCheckpoint()!,
      });
      expect(await next.done).to.deep.equal({ ok: true });
      const [, second] = fake.bodies().slice(-2);
      const before = fake.history(first as never) as unknown[];
      const after = fake.history(second as never) as unknown[];
      expect(JSON.stringify(after.slice(0, before.length))).to.equal(JSON.stringify(before));
      expect(after.length).to.be.greaterThan(before.length);
      const log = gw.stderrLines().join("\n");
      expect(log).not.to.include("sk-e2e-attach");
    });
  }

  it("a get_blob_result whose bytes do not match the attachment's blob id fails the run with invalid_argument", async () => {
    const client = new CursorClient(gw.url);
    const right = utf8("the real diff");
    client.blobs.set(sha256Hex(right), utf8("something else"));
    const run = client.startRun({
      conversationId: `attach-bad-${randomUUID()}`,
      modelId: "openai-chat",
      text: "look",
      customize: (r: AgentRunRequest) => {
        userMessageOf(r).selectedContext = create(SelectedContextSchema, {
          selectedPullRequests: [{ number: 1, url: "u", blobId: blobId(right) }],
        });
      },
    });
    expect(await run.done).to.deep.include({ ok: false, code: "invalid_argument" });
  });

  it("a pre-fetched blob whose bytes do not match its id fails the run with invalid_argument", async () => {
    const client = new CursorClient(gw.url);
    const run = client.startRun({
      conversationId: `attach-prefetch-${randomUUID()}`,
      modelId: "openai-chat",
      text: "look",
      customize: (r: AgentRunRequest) => {
        r.preFetchedBlobs = [create(PreFetchedBlobSchema, { id: blobId(utf8("a")), value: utf8("b") })];
      },
    });
    const end = await run.done;
    expect(end).to.deep.include({ ok: false, code: "invalid_argument" });
    expect((end as { message: string }).message).to.include("pre_fetched_blobs");
  });

  it("context the gateway does not use yet is named once in an info log line", async () => {
    const client = new CursorClient(gw.url);
    chat.enqueue({ text: "ok" });
    const run = client.startRun({
      conversationId: `attach-unused-${randomUUID()}`,
      modelId: "openai-chat",
      text: "look",
      requestContext: { fileContents: { "a.ts": "x" } },
      customize: (r: AgentRunRequest) => {
        userMessageOf(r).selectedContext = create(SelectedContextSchema, {
          uiElements: [{ element: "button", xpath: "/x", textContent: "OK", extra: "" }],
        });
      },
    });
    expect(await run.done).to.deep.equal({ ok: true });
    const lines = gw
      .stderrLines()
      .filter((l) => l.includes("request context not used yet") && l.includes(run.requestId))
      .map((l) => JSON.parse(l) as { level: string; unused: string[] });
    expect(lines).to.have.length(1);
    expect(lines[0]!.unused).to.deep.equal(["selected_context.ui_elements", "request_context.file_contents"]);
  });
});
