import { expect } from "chai";
import { createParser } from "eventsource-parser";
import { readFile } from "node:fs/promises";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { fixturePath } from "../support/util.js";

const fixture = fixturePath("providers/openai-chat/text-then-tool-call.sse");

interface ChunkRecord {
  choices: Array<{
    delta: {
      content?: string;
      reasoning_content?: string;
      tool_calls?: Array<{ index: number; id?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason: string | null;
  }>;
  usage?: unknown;
}

interface Reassembled {
  reasoning: string;
  text: string;
  toolCalls: Array<{ id: string; name: string; args: string }>;
  finish: string | null;
  usage: unknown;
  sawDone: boolean;
  records: ChunkRecord[];
}

/** A minimal Chat Completions stream consumer, built on eventsource-parser like a provider adapter would be. */
function reassemble(sse: string): Reassembled {
  const out: Reassembled = {
    reasoning: "",
    text: "",
    toolCalls: [],
    finish: null,
    usage: undefined,
    sawDone: false,
    records: [],
  };
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") return void (out.sawDone = true);
      const chunk = JSON.parse(event.data) as ChunkRecord;
      out.records.push(chunk);
      if (chunk.usage) out.usage = chunk.usage;
      for (const choice of chunk.choices) {
        const d = choice.delta;
        out.reasoning += d.reasoning_content ?? "";
        out.text += d.content ?? "";
        for (const tc of d.tool_calls ?? []) {
          out.toolCalls[tc.index] ??= { id: "", name: "", args: "" };
          const call = out.toolCalls[tc.index]!;
          call.id ||= tc.id ?? "";
          call.name ||= tc.function?.name ?? "";
          call.args += tc.function?.arguments ?? "";
        }
        if (choice.finish_reason) out.finish = choice.finish_reason;
      }
    },
  });
  parser.feed(sse);
  return out;
}

async function chat(
  fake: FakeOpenAI,
  body: object = { model: "m", stream: true, stream_options: { include_usage: true } },
) {
  return fetch(`${fake.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
    body: JSON.stringify(body),
  });
}

describe("fake OpenAI Chat Completions server", () => {
  let fake: FakeOpenAI;
  beforeEach(async () => (fake = await startFakeOpenAI()));
  afterEach(() => fake.close());

  it("streams a scripted turn as chunks a Chat Completions consumer reassembles exactly", async () => {
    fake.enqueue({
      reasoning: "think first",
      text: "héllo wörld 👋",
      toolCalls: [
        { id: "call_1", name: "Read", args: { path: "a.ts" } },
        { id: "call_2", name: "Grep", args: '{"pattern":' },
      ],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
      chunkSize: 3,
    });
    const res = await chat(fake);
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("text/event-stream");
    const got = reassemble(await res.text());
    expect(got.reasoning).to.equal("think first");
    expect(got.text).to.equal("héllo wörld 👋");
    expect(got.toolCalls).to.deep.equal([
      { id: "call_1", name: "Read", args: '{"path":"a.ts"}' },
      { id: "call_2", name: "Grep", args: '{"pattern":' },
    ]);
    expect(got.finish).to.equal("tool_calls");
    expect(got.usage).to.deep.equal({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    expect(got.sawDone).to.equal(true);
    // chunkSize 3 over 13 characters ⇒ 5 content deltas; the usage record comes last with no choices.
    const contentDeltas = got.records.filter((r) => r.choices[0]?.delta.content);
    expect(contentDeltas).to.have.length(5);
    expect(got.records.at(-1)!.choices).to.deep.equal([]);
  });

  it("sends usage only when the request asks for it, as the real API does", async () => {
    fake.enqueue({ text: "hi" });
    const got = reassemble(await (await chat(fake, { model: "m", stream: true })).text());
    expect(got.usage).to.equal(undefined);
    expect(got.finish).to.equal("stop");
  });

  it("records each request's headers and parsed body", async () => {
    fake.enqueue({ text: "a" }, { text: "b" });
    await (await chat(fake, { model: "m1", stream: true, messages: [{ role: "user", content: "x" }] })).text();
    await (await chat(fake, { model: "m2", stream: true })).text();
    const requests = await fake.waitForRequests(2);
    expect(requests[0]!.headers.authorization).to.equal("Bearer sk-test");
    expect(requests[0]!.body.messages).to.deep.equal([{ role: "user", content: "x" }]);
    expect(requests[1]!.body.model).to.equal("m2");
    expect(fake.pending()).to.equal(0);
  });

  it("fails loudly with HTTP 500 when no turn is queued", async () => {
    const res = await chat(fake);
    expect(res.status).to.equal(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).to.match(/no scripted turn/);
  });

  it("rejects a non-streaming request with 400", async () => {
    fake.enqueue({ text: "x" });
    const res = await chat(fake, { model: "m" });
    expect(res.status).to.equal(400);
  });

  it("replays a recorded fixture byte for byte, also when split into small writes", async () => {
    fake.enqueue({ fixture }, { fixture, splitBytes: 7 });
    const expected = await readFile(fixture, "utf8");
    expect(await (await chat(fake)).text()).to.equal(expected);
    expect(await (await chat(fake)).text()).to.equal(expected);
  });

  it("answers an HTTP error turn with its status and body", async () => {
    fake.enqueue({ status: 429, body: '{"error":{"message":"slow down"}}' });
    const res = await chat(fake);
    expect(res.status).to.equal(429);
    expect(await res.text()).to.equal('{"error":{"message":"slow down"}}');
  });

  it("ends a bareEof turn without finish_reason or [DONE]", async () => {
    fake.enqueue({ bareEof: true, text: "partial" });
    const got = reassemble(await (await chat(fake)).text());
    expect(got.text).to.equal("partial");
    expect(got.finish).to.equal(null);
    expect(got.sawDone).to.equal(false);
  });

  it("keeps a hanging turn open until close() destroys the socket", async () => {
    fake.enqueue({ hang: true });
    const res = await chat(fake);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).to.include("chat.completion.chunk");
    const pending = reader.read().then(
      (r) => (r.done ? "ended" : "more"),
      () => "errored",
    );
    const raced = await Promise.race([pending, new Promise((r) => setTimeout(() => r("still open"), 100))]);
    expect(raced).to.equal("still open");
    await fake.close();
    // Another read may first drain buffered chunks; the stream must then end in an error, never a clean finish.
    let outcome = await pending;
    while (outcome === "more")
      outcome = await reader.read().then(
        (r) => (r.done ? "ended" : "more"),
        () => "errored",
      );
    expect(outcome).to.equal("errored");
  });
});
