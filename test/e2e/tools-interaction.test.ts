// Wire-level e2e: a tool that asks the user through the client (docs/protocol/cursor-tools.md §1.1, §5.10). The model
// calls AskQuestion; the gateway sends an interaction_query, the client's interaction_response is the result.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import {
  AgentClientMessageSchema,
  AskQuestionInteractionResponseSchema,
  type InteractionQuery,
  type InteractionResponse,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { assertCleanSuccess, assertPrefix, updates, useToolsRig, SETTLED_ROUND_THEN_ANSWER } from "./tools-kit.js";

const question = {
  questions: [
    {
      id: "db",
      prompt: "Which database should the tests use?",
      options: [
        { id: "sqlite", label: "SQLite" },
        { id: "pg", label: "PostgreSQL" },
      ],
    },
  ],
};

type ReplyInit = NonNullable<MessageInitShape<typeof AskQuestionInteractionResponseSchema>["result"]>;
const reply = (result: ReplyInit) =>
  ({
    case: "askQuestionInteractionResponse",
    value: create(AskQuestionInteractionResponseSchema, { result }),
  }) as InteractionResponse["result"];

const STAGED_THEN_QUESTION = [
  "text_delta",
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...Array<string>(5).fill("kv_set"),
  "checkpoint",
  "tool_call_started",
  "query:ask_question_interaction_query",
];

describe("e2e tools: questions for the user (AskQuestion)", function () {
  this.timeout(10_000);
  const rig = useToolsRig("tools-ask");

  it("asks with an interaction_query and gives the model the answer the user picked", async () => {
    const fake = await rig.fake(
      { text: "Let me ask.", toolCalls: [{ id: "call_ask_1", name: "AskQuestion", args: question }] },
      { text: "SQLite it is." },
    );
    const asked: InteractionQuery[] = [];
    const { client, run } = rig.start(fake, {
      text: "set up the tests",
      hooks: {
        onInteraction(query) {
          asked.push(query);
          return reply({
            result: { case: "success", value: { answers: [{ questionId: "db", selectedOptionIds: ["sqlite"] }] } },
          });
        },
      },
    });
    await run.done;

    expect(run.kinds()).to.deep.equal([...STAGED_THEN_QUESTION, "tool_call_completed", ...SETTLED_ROUND_THEN_ANSWER]);
    assertCleanSuccess(run, client);
    expect(asked).to.have.length(1);
    expect(asked[0]!.id).to.equal(1);
    const query = asked[0]!.query;
    if (query.case !== "askQuestionInteractionQuery") expect.fail(`expected an AskQuestion query, got ${query.case}`);
    expect(query.value.toolCallId).to.equal("call_ask_1");
    expect(query.value.args?.questions.map((q) => q.prompt)).to.deep.equal(["Which database should the tests use?"]);

    const [completed] = updates(run, "toolCallCompleted");
    const card = completed!.toolCall!.tool;
    if (card.case !== "askQuestionToolCall") expect.fail(`expected an AskQuestion card, got ${card.case}`);
    expect(card.value.result?.result.case).to.equal("success");

    const [first, second] = fake.requests;
    const added = assertPrefix(first!, second!);
    expect(added[1]).to.deep.equal({
      role: "tool",
      tool_call_id: "call_ask_1",
      content: "Which database should the tests use?\nAnswer: SQLite",
    });
  });

  it("a declined question is an error result the model reads, and the turn goes on", async () => {
    const fake = await rig.fake(
      { text: "Let me ask.", toolCalls: [{ id: "call_ask_2", name: "AskQuestion", args: question }] },
      { text: "I will pick SQLite then." },
    );
    const { client, run } = rig.start(fake, {
      text: "set up the tests",
      hooks: { onInteraction: () => reply({ result: { case: "rejected", value: { reason: "decide yourself" } } }) },
    });
    await run.done;
    expect(run.kinds()).to.deep.equal([...STAGED_THEN_QUESTION, "tool_call_completed", ...SETTLED_ROUND_THEN_ANSWER]);
    assertCleanSuccess(run, client);
    const added = assertPrefix(fake.requests[0]!, fake.requests[1]!);
    expect(added[1]).to.deep.include({ role: "tool", content: "The user declined to answer: decide yourself" });
  });

  it("a cancel while the question is open ends the run canceled, with nothing left waiting", async () => {
    const fake = await rig.fake({
      text: "Let me ask.",
      toolCalls: [{ id: "call_ask_3", name: "AskQuestion", args: question }],
    });
    const { run } = rig.start(fake, {
      text: "set up the tests",
      hooks: {
        onInteraction: (_query, ctx) => {
          void ctx.run.cancel("user pressed stop");
          return undefined;
        },
      },
    });
    const ended = await run.done;
    expect(ended).to.deep.include({ ok: false });
    expect(run.kinds()).to.deep.equal([...STAGED_THEN_QUESTION, "end:canceled"]);
    expect(fake.requests).to.have.length(1);
  });

  it("an answer for an interaction id never asked fails the run invalid_argument", async () => {
    const fake = await rig.fake({
      text: "Let me ask.",
      toolCalls: [{ id: "call_ask_4", name: "AskQuestion", args: question }],
    });
    const { run } = rig.start(fake, {
      text: "set up the tests",
      hooks: {
        onInteraction: (query, ctx) => {
          const result = reply({ result: { case: "async", value: {} } });
          const message = { case: "interactionResponse" as const, value: { id: query.id + 41, result } };
          void ctx.run.append(create(AgentClientMessageSchema, { message }));
          return undefined;
        },
      },
    });
    const ended = await run.done;
    expect(ended).to.deep.include({ ok: false });
    expect(run.kinds().at(-1)).to.equal("end:invalid_argument");
  });
});
