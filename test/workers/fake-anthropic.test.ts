// The fake Anthropic Messages API speaks the real SSE shape; the driver tests rely on it, so it is checked here with
// a plain SSE consumer.
import { expect } from "chai";
import { createParser } from "eventsource-parser";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";

interface Sse {
  events: Array<{ event: string; data: any }>; // parsed JSON payloads of any event type
  status: number;
  error?: string;
}

async function post(fake: FakeAnthropic, path: string, body: object): Promise<Sse> {
  const res = await fetch(`${fake.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const out: Sse = { events: [], status: res.status };
  if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    out.events.push({ event: "json", data: await res.json() });
    return out;
  }
  const parser = createParser({
    onEvent: (e) => void out.events.push({ event: e.event ?? "message", data: JSON.parse(e.data) }),
  });
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) parser.feed(Buffer.from(chunk).toString("utf8"));
  } catch (err) {
    out.error = String(err);
  }
  return out;
}

const streamed = { model: "claude-test", stream: true, max_tokens: 10, messages: [{ role: "user", content: "hi" }] };

describe("fake Anthropic Messages API", () => {
  let fake: FakeAnthropic;
  beforeEach(async () => {
    fake = await startFakeAnthropic();
  });
  afterEach(() => fake.close());

  it("streams text, thinking with signature, redacted thinking and tool_use blocks as the real API does", async () => {
    fake.enqueue({
      blocks: [
        { type: "thinking", thinking: "hmm", signature: "sig" },
        { type: "redacted_thinking", data: "opaque" },
        { type: "text", text: "Hello!" },
        { type: "tool_use", id: "toolu_x", name: "Bash", input: { command: "ls" } },
      ],
      chunkSize: 3,
    });
    const { events, status } = await post(fake, "/v1/messages?beta=true", streamed);
    expect(status).to.equal(200);
    expect(events.map((e) => e.event)).to.deep.equal([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      ...Array(7).fill("content_block_delta"),
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events.every((e) => e.data.type === e.event)).to.equal(true);
    expect(events[0]?.data.message).to.deep.include({
      model: "claude-test",
      role: "assistant",
      content: [],
      stop_reason: null,
    });
    expect(events[0]?.data.message.usage).to.include({ input_tokens: 12 });
    expect(events.slice(3, 5).map((e) => e.data.delta)).to.deep.equal([
      { type: "thinking_delta", thinking: "hmm" },
      { type: "signature_delta", signature: "sig" },
    ]);
    expect(events[6]?.data.content_block).to.deep.equal({ type: "redacted_thinking", data: "opaque" });
    expect(events[12]?.data.content_block).to.deep.equal({ type: "tool_use", id: "toolu_x", name: "Bash", input: {} });
    const json = events
      .slice(13, 20)
      .map((e) => e.data.delta.partial_json)
      .join("");
    expect(JSON.parse(json)).to.deep.equal({ command: "ls" });
    expect(events.at(-2)?.data).to.deep.equal({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { output_tokens: 5 },
    });
    expect(fake.pending()).to.equal(0);
    expect(fake.messageRequests()[0]?.body.messages).to.deep.equal(streamed.messages);
  });

  it("answers HTTP errors with the API's error body, and a missing script with a 400 that says so", async () => {
    fake.enqueue({ status: 529 }, { status: 500, error: { message: "boom" } });
    expect((await post(fake, "/v1/messages", streamed)).events[0]?.data).to.deep.include({
      type: "error",
      error: { type: "overloaded_error", message: "fake overloaded_error" },
    });
    const five = await post(fake, "/v1/messages", streamed);
    expect(five.status).to.equal(500);
    expect(five.events[0]?.data.error).to.deep.equal({ type: "api_error", message: "boom" });
    const none = await post(fake, "/v1/messages", streamed);
    expect(none.status).to.equal(400);
    expect(none.events[0]?.data.error.message).to.match(/no scripted reply left/);
  });

  it("sends an error event mid-stream (after slow deltas), or cuts the connection", async () => {
    fake.enqueue(
      { blocks: [{ type: "text", text: "abcdef" }], chunkSize: 2, errorAfterDeltas: 1, deltaDelayMs: 1 },
      { blocks: [{ type: "text", text: "abcdef" }], chunkSize: 2, disconnectAfterDeltas: 1 },
    );
    const errored = await post(fake, "/v1/messages", streamed);
    expect(errored.events.map((e) => e.event).slice(-2)).to.deep.equal(["content_block_delta", "error"]);
    expect(errored.events.at(-1)?.data).to.deep.equal({
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
    const cut = await post(fake, "/v1/messages", streamed);
    expect(cut.events.map((e) => e.event).at(-1)).to.equal("content_block_delta");
    expect(cut.error).to.be.a("string");
  });

  it("holds a stream until released", async () => {
    let release!: () => void;
    fake.enqueue({
      blocks: [{ type: "text", text: "abcd" }],
      chunkSize: 2,
      holdAfterDeltas: 1,
      release: new Promise<void>((r) => (release = r)),
    });
    const reply = post(fake, "/v1/messages", streamed);
    await fake.waitForMessageRequests(1);
    release();
    const { events } = await reply;
    expect(events.filter((e) => e.event === "content_block_delta")).to.have.length(2);
    expect(events.at(-1)?.event).to.equal("message_stop");
  });

  it("answers non-streamed calls from their own queue as one message", async () => {
    fake.enqueueUnstreamed(
      {
        blocks: [
          { type: "text", text: "whole" },
          { type: "tool_use", id: "toolu_w", name: "Read", input: { file_path: "/x" } },
        ],
      },
      { status: 529 },
    );
    const body = { model: "m", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] };
    expect((await post(fake, "/v1/messages", body)).events[0]?.data).to.deep.include({
      content: [
        { type: "text", text: "whole" },
        { type: "tool_use", id: "toolu_w", name: "Read", input: { file_path: "/x" } },
      ],
      stop_reason: "tool_use",
    });
    expect((await post(fake, "/v1/messages", body)).status).to.equal(529);
  });

  it("answers count_tokens and non-streamed calls harmlessly without using the script, and logs every request", async () => {
    fake.enqueue({ blocks: [{ type: "text", text: "kept" }] });
    const count = await post(fake, "/v1/messages/count_tokens?beta=true", { model: "m", messages: [] });
    expect(count.events[0]?.data).to.have.property("input_tokens").that.is.a("number");
    const probe = await post(fake, "/v1/messages", {
      model: "m",
      max_tokens: 1,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(probe.events[0]?.data).to.deep.include({ type: "message", role: "assistant", stop_reason: "end_turn" });
    expect(fake.pending()).to.equal(1);
    expect(fake.requests.map((r) => [r.path, r.scripted])).to.deep.equal([
      ["/v1/messages/count_tokens", false],
      ["/v1/messages", false],
    ]);
  });
});
