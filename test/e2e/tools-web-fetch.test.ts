// Wire-level e2e: WebFetch, two phases in one model call (docs/protocol/cursor-tools.md §5.9). The approval goes to
// the user as an interaction_query; approved, the same call sends fetch_args under a new Exec id and the client's
// fetch_result is the typed result; rejected, the call ends with the typed rejection and nothing is fetched.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { type InteractionQuery, WebFetchRequestResponseSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { InteractionResponse } from "../../proto/gen/agent/v1/agent_pb.js";
import { execToolHooks, type PageInit } from "../support/exec-tools-client.js";
import {
  assertCleanSuccess,
  assertPrefix,
  execs,
  updates,
  useToolsRig,
  SETTLED_ROUND_THEN_ANSWER,
} from "./tools-kit.js";

const URL = "https://docs.example.com/api";
const PAGES = new Map<string, PageInit>([
  [URL, { content: "# API\n\nGET /items lists items.", statusCode: 200, contentType: "text/html" }],
]);

const STAGED_THEN_APPROVAL = [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
  "tool_call_started",
  "query:web_fetch_request_query",
];

const decide = (approve: boolean, reason = ""): InteractionResponse["result"] => ({
  case: "webFetchRequestResponse",
  value: create(WebFetchRequestResponseSchema, {
    result: approve ? { case: "approved", value: {} } : { case: "rejected", value: { reason } },
  }),
});

function fetchCall(id: string, url = URL) {
  return { text: "Let me read the docs.", toolCalls: [{ id, name: "WebFetch", args: { url } }] };
}

function completedResult(run: Parameters<typeof updates>[0]) {
  const completed = updates(run, "toolCallCompleted");
  expect(completed).to.have.length(1);
  const tool = completed[0]!.toolCall!.tool;
  if (tool.case !== "webFetchToolCall") expect.fail(`expected a web fetch card, got ${tool.case}`);
  return tool.value;
}

describe("e2e tools: WebFetch (approval, then fetch_args)", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-fetch");

  it("approved: the query, then fetch_args for the same call, then the page as the typed result", async () => {
    const fake = await rig.fake(fetchCall("call_fetch_1"), { text: "GET /items lists them." });
    const asked: InteractionQuery[] = [];
    const { client, run } = rig.start(fake, {
      text: "how do I list items?",
      hooks: {
        ...execToolHooks({ pages: PAGES }),
        onInteraction: (query) => (asked.push(query), decide(true)),
      },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED_THEN_APPROVAL,
      "exec:fetch_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(updates(run, "partialToolCall")[0]!.toolCall?.tool.case).to.equal("webFetchToolCall");
    expect(asked).to.have.length(1);
    const query = asked[0]!.query;
    if (query.case !== "webFetchRequestQuery") expect.fail(`expected a web fetch query, got ${query.case}`);
    expect(query.value.args).to.include({ url: URL, toolCallId: "call_fetch_1" });
    expect(query.value.skipApproval).to.equal(false);
    // The approval hands the call to the Exec table: a new Exec id (the one set aside at the start stays unused).
    const [fetch] = execs(run);
    expect(fetch!.value).to.include({ url: URL, toolCallId: "call_fetch_1" });
    expect(fetch!.id).to.equal(2);

    const card = completedResult(run);
    expect(card.args).to.include({ url: URL, toolCallId: "call_fetch_1" });
    expect(card.result?.result).to.deep.include({ case: "success" });
    expect(card.result?.result.value).to.include({ url: URL, markdown: "# API\n\nGET /items lists items." });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.equal({
      role: "tool",
      tool_call_id: "call_fetch_1",
      content: `Fetched ${URL} (HTTP 200, text/html):\n\n# API\n\nGET /items lists items.`,
    });
  });

  it("rejected: the typed rejection is the result, nothing is fetched, and the turn goes on", async () => {
    const fake = await rig.fake(fetchCall("call_fetch_2"), { text: "I will answer from what I know." });
    const { client, run } = rig.start(fake, {
      text: "how do I list items?",
      hooks: { ...execToolHooks({ pages: PAGES }), onInteraction: () => decide(false, "stay offline") },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([...STAGED_THEN_APPROVAL, "tool_call_completed", ...SETTLED_ROUND_THEN_ANSWER]);
    assertCleanSuccess(run, client);
    expect(execs(run)).to.deep.equal([]);
    expect(completedResult(run).result?.result).to.deep.equal({
      case: "rejected",
      value: { $typeName: "agent.v1.WebFetchRejected", reason: "stay offline" },
    });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ content: `The user declined to fetch ${URL}: stay offline` });
  });

  it("approved but the client cannot fetch: the typed fetch error is the result the model reads", async () => {
    const fake = await rig.fake();
    const missing = "https://nowhere.example/x";
    fake.enqueue(fetchCall("call_fetch_3", missing), { text: "The page is unreachable." });
    const { client, run } = rig.start(fake, {
      text: "read that page",
      hooks: { ...execToolHooks({ pages: PAGES }), onInteraction: () => decide(true) },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([
      ...STAGED_THEN_APPROVAL,
      "exec:fetch_args",
      "tool_call_completed",
      ...SETTLED_ROUND_THEN_ANSWER,
    ]);
    assertCleanSuccess(run, client);
    expect(completedResult(run).result?.result).to.deep.include({ case: "error" });
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({
      content: `Fetching ${missing} failed: fake client: no page at ${missing}`,
    });
  });

  it("a cancel while the approval is open ends the run canceled, with nothing left waiting", async () => {
    const fake = await rig.fake(fetchCall("call_fetch_4"));
    const { run } = rig.start(fake, {
      text: "how do I list items?",
      hooks: {
        onInteraction: (_query, ctx) => {
          void ctx.run.cancel("user pressed stop");
          return undefined;
        },
      },
    });
    const ended = await run.done;
    expect(ended).to.deep.include({ ok: false });
    expect(run.kinds()).to.deep.equal([...STAGED_THEN_APPROVAL, "end:canceled"]);
    expect(run.aborts).to.deep.equal([]);
    expect(fake.requests).to.have.length(1);
  });

  it("a cancel while the approved fetch runs aborts that Exec by its id and ends canceled", async () => {
    const fake = await rig.fake(fetchCall("call_fetch_5"));
    const { run } = rig.start(fake, {
      text: "how do I list items?",
      hooks: {
        onInteraction: () => decide(true),
        onExec: (_exec, ctx) => {
          void ctx.run.cancel("user pressed stop");
          return { silent: true };
        },
      },
    });
    const ended = await run.done;
    expect(ended).to.deep.include({ ok: false });
    expect(run.kinds()).to.deep.equal([...STAGED_THEN_APPROVAL, "exec:fetch_args", "abort", "end:canceled"]);
    expect(run.aborts).to.deep.equal([execs(run)[0]!.id]);
  });
});
