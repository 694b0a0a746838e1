// Wire-level: request_context_parts (docs/protocol/cursor-run.md §2.6.1). The client sends rules, skills, subagents
// and MCP instructions as blob references with only dynamic_context inline; the gateway fetches each blob with
// get_blob_args, checks hash and length, decodes it and renders it in the runtime message's documented sections, with
// git status from dynamic_context. The next turn's request starts with this one's bytes; a wrong length, a wrong
// hash or bytes that are not the part's message fail the run with invalid_argument.
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobId } from "../../cursor/blob-graph.js";
import {
  type AgentRunRequest,
  RequestContextMcpsPartSchema,
  RequestContextPartReferencesSchema,
  RequestContextRulesPartSchema,
  RequestContextSkillsPartSchema,
  RequestContextSubagentsPartSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { sha256Hex } from "../support/client-responder.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";

const encode = <D extends DescMessage>(schema: D, init: MessageInitShape<D>) => toBinary(schema, create(schema, init));

/** The four parts; `tag` makes each test's blobs new to the gateway's store, so it must fetch them. */
function parts(tag: string) {
  return {
    rules: encode(RequestContextRulesPartSchema, {
      rules: [{ fullPath: ".cursor/rules/style.mdc", content: `use tabs (${tag})` }],
      nonFileRules: [{ content: "answer in English" }],
    }),
    skills: encode(RequestContextSkillsPartSchema, {
      agentSkills: [{ fullPath: "skills/pdf/SKILL.md", description: `read PDFs (${tag})` }],
    }),
    subagents: encode(RequestContextSubagentsPartSchema, {
      customSubagents: [{ name: "reviewer", description: `reviews diffs (${tag})` }],
    }),
    mcps: encode(RequestContextMcpsPartSchema, {
      tools: [{ name: "docs-search", toolName: "search", providerIdentifier: "docs" }],
      mcpInstructions: [{ serverName: "docs", instructions: `query docs first (${tag})` }],
    }),
  };
}

const EXPECTED = (tag: string) => `<git_status>
Repository: /w
Branch: main
M src/a.ts
</git_status>

<rules>
<rule>
use tabs (${tag})
</rule>
<rule>
answer in English
</rule>
</rules>

<skills>
- skills/pdf/SKILL.md: read PDFs (${tag})
</skills>

<subagents>
- reviewer: reviews diffs (${tag})
</subagents>

<mcp_instructions>
<server name="docs">
query docs first (${tag})
</server>
</mcp_instructions>`;

const inJson = (text: string) => JSON.stringify(text).slice(1, -1);

type Parts = ReturnType<typeof parts>;

/** The run_request carries the parts by reference and only dynamic_context inline (no request_context). */
function byReference(p: Parts, lengths: Partial<Record<keyof Parts, number>> = {}) {
  return (r: AgentRunRequest) => {
    const action = r.action!;
    if (action.action.case === "userMessageAction") action.action.value.requestContext = undefined;
    const ref = (k: keyof Parts) => ({ id: blobId(p[k]), length: lengths[k] ?? p[k].byteLength });
    action.requestContextParts = create(RequestContextPartReferencesSchema, {
      rulesBlobId: ref("rules").id,
      rulesByteLength: ref("rules").length,
      skillsBlobId: ref("skills").id,
      skillsByteLength: ref("skills").length,
      subagentsBlobId: ref("subagents").id,
      subagentsByteLength: ref("subagents").length,
      mcpsBlobId: ref("mcps").id,
      mcpsByteLength: ref("mcps").length,
      dynamicContext: {
        env: { osVersion: "linux", shell: "zsh", workspacePaths: ["/w"] },
        gitRepos: [{ path: "/w", branchName: "main", status: "M src/a.ts" }],
      },
    });
  };
}

describe("e2e: request_context_parts are fetched, checked and compiled into the runtime message", function () {
  this.timeout(30_000);
  let chat: FakeOpenAI;
  let gw: GatewayProcess;
  let dataDir: string;

  before(async () => {
    chat = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-parts-"));
    gw = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          { id: "gpt-parts", provider: "openai-chat", baseUrl: chat.baseUrl, apiKey: "sk-e2e-parts", model: "m" },
        ],
      },
      upstream: "http://127.0.0.1:9",
    });
  });
  after(async () => {
    await killAllGateways();
    await chat?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("each part is fetched with get_blob_args and rendered; the next turn starts with this turn's bytes", async () => {
    const client = new CursorClient(gw.url);
    const p = parts("turn 1");
    for (const b of Object.values(p)) client.putBlob(b);
    const conversationId = `parts-${randomUUID()}`;
    chat.enqueue({ text: "first" });
    const run = client.startRun({ conversationId, modelId: "gpt-parts", text: "hi", customize: byReference(p) });
    expect(await run.done).to.deep.equal({ ok: true });
    const fetched = run.kvLog.filter((k) => k.case === "getBlobArgs").map((k) => k.blobId);
    expect(fetched.sort()).to.deep.equal(Object.values(p).map(sha256Hex).sort());
    const first = chat.requests.at(-1)!.body as { messages: unknown[] };
    expect(JSON.stringify(first)).to.include(inJson(EXPECTED("turn 1")));
    expect(JSON.stringify(first)).to.include(inJson("<user_info>\nOS: linux\nShell: zsh\nWorkspace path: /w\n"));

    // The next turn sends changed parts: its own runtime message has them, the earlier one keeps its bytes.
    const q = parts("turn 2");
    for (const b of Object.values(q)) client.putBlob(b);
    chat.enqueue({ text: "second" });
    const next = client.startRun({
      conversationId,
      modelId: "gpt-parts",
      text: "again",
      checkpoint: run.lastCheckpoint()!,
      customize: byReference(q),
    });
    expect(await next.done).to.deep.equal({ ok: true });
    const second = chat.requests.at(-1)!.body as { messages: unknown[] };
    expect(JSON.stringify(second.messages.slice(0, first.messages.length))).to.equal(JSON.stringify(first.messages));
    expect(JSON.stringify(second.messages.slice(first.messages.length))).to.include(inJson(EXPECTED("turn 2")));
    const unused = gw
      .stderrLines()
      .filter((l) => l.includes("request context not used yet") && l.includes(next.requestId))
      .map((l) => (JSON.parse(l) as { unused: string[] }).unused);
    expect(unused, "the MCP part's tool list is used: nothing is named unused").to.deep.equal([]);
    const offered = (chat.requests.at(-1)!.body as { tools: Array<{ function: { name: string } }> }).tools;
    expect(
      offered.map((t) => t.function.name),
      "the MCP part's tools are offered",
    ).to.include("mcp__docs__search");
  });

  it("a part whose byte length differs from its reference fails the run with invalid_argument", async () => {
    const client = new CursorClient(gw.url);
    const p = parts("length");
    for (const b of Object.values(p)) client.putBlob(b);
    const run = client.startRun({
      conversationId: `parts-len-${randomUUID()}`,
      modelId: "gpt-parts",
      text: "hi",
      customize: byReference(p, { skills: p.skills.byteLength - 1 }),
    });
    const end = await run.done;
    expect(end).to.deep.include({ ok: false, code: "invalid_argument" });
    expect((end as { message: string }).message)
      .to.include("skills")
      .and.include("bytes");
  });

  it("a get_blob_result whose bytes do not hash to the part's blob id fails the run with invalid_argument", async () => {
    const client = new CursorClient(gw.url);
    const p = parts("hash");
    for (const b of Object.values(p)) client.putBlob(b);
    client.blobs.set(sha256Hex(p.mcps), new Uint8Array(p.mcps.byteLength));
    const run = client.startRun({
      conversationId: `parts-hash-${randomUUID()}`,
      modelId: "gpt-parts",
      text: "hi",
      customize: byReference(p),
    });
    expect(await run.done).to.deep.include({ ok: false, code: "invalid_argument" });
  });

  it("a part blob that is not its part message fails the run with invalid_argument", async () => {
    const client = new CursorClient(gw.url);
    const p = { ...parts("junk"), subagents: new Uint8Array([0xff, 0xff, 0xff, 0x01]) };
    for (const b of Object.values(p)) client.putBlob(b);
    const run = client.startRun({
      conversationId: `parts-junk-${randomUUID()}`,
      modelId: "gpt-parts",
      text: "hi",
      customize: byReference(p),
    });
    const end = await run.done;
    expect(end).to.deep.include({ ok: false, code: "invalid_argument" });
    expect((end as { message: string }).message).to.include("RequestContextSubagentsPart");
  });
});
