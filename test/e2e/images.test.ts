// Wire-level: attached images reach each endpoint kind as its own image part (docs/protocol/cursor-run.md §8.8.1):
// OpenAI Chat `image_url` data URLs, Responses `input_image`, Anthropic `image` blocks with a base64 source. One
// image comes inline, one by blob id (fetched with get_blob_args). The next turn's request starts with this one's
// bytes, images included (also after a restart, rebuilt from the checkpoint); a model configured with
// `images: false` refuses the run with invalid_argument naming it.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobId } from "../../cursor/blob-graph.js";
import { type AgentRunRequest, SelectedContextSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { sha256Hex } from "../support/client-responder.js";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type FakeOpenAIResponses, startFakeOpenAIResponses } from "../support/fake-openai-responses.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";

type Endpoint = "openai-chat" | "openai-responses" | "anthropic";
type Body = { messages?: unknown[]; input?: unknown[] };

/** Distinct bytes per endpoint, so each test's blob is new to the gateway's store and must be fetched. */
const PNG = (e: string) => Buffer.from(`\x89PNG\r\n\x1a\n inline pixels for ${e}`);
const JPEG = (e: string) => Buffer.from(`\xff\xd8\xff jpeg pixels by blob for ${e}`);

/** The two images in the endpoint's own shape, in the client's order, ahead of the runtime message's text. */
function expectedParts(e: Endpoint): unknown[] {
  const [png, jpeg] = [PNG(e).toString("base64"), JPEG(e).toString("base64")];
  if (e === "anthropic")
    return [
      { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: jpeg } },
    ];
  const urls = [`data:image/png;base64,${png}`, `data:image/jpeg;base64,${jpeg}`];
  return e === "openai-chat"
    ? urls.map((url) => ({ type: "image_url", image_url: { url } }))
    : urls.map((url) => ({ type: "input_image", image_url: url, detail: "auto" }));
}

describe("e2e: attached images reach each endpoint kind as image parts", function () {
  this.timeout(30_000);
  let chat: FakeOpenAI;
  let responses: FakeOpenAIResponses;
  let anthropic: FakeAnthropic;
  let gw: GatewayProcess;
  let dataDir: string;

  const start = () => {
    const model = (id: string, provider: Endpoint, baseUrl: string, images?: boolean) => ({
      id,
      provider,
      baseUrl,
      apiKey: "sk-e2e-images",
      model: id,
      ...(images === undefined ? {} : { images }),
    });
    return startGatewayProcess({
      dataDir,
      config: {
        models: [
          model("openai-chat", "openai-chat", chat.baseUrl),
          model("openai-responses", "openai-responses", responses.baseUrl),
          model("anthropic", "anthropic", anthropic.baseUrl),
          model("text-only", "openai-chat", chat.baseUrl, false),
        ],
      },
      upstream: "http://127.0.0.1:9",
    });
  };

  before(async () => {
    [chat, responses, anthropic] = await Promise.all([
      startFakeOpenAI(),
      startFakeOpenAIResponses(),
      startFakeAnthropic(),
    ]);
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-images-"));
    gw = await start();
  });
  after(async () => {
    await killAllGateways();
    await Promise.all([chat?.close(), responses?.close(), anthropic?.close()]);
    await rm(dataDir, { recursive: true, force: true });
  });

  const fakes = {
    "openai-chat": { reply: (t: string) => chat.enqueue({ text: t }), last: () => chat.requests.at(-1)!.body },
    "openai-responses": {
      reply: (t: string) => responses.enqueue({ text: t }),
      last: () => responses.requests.at(-1)!.body,
    },
    anthropic: {
      reply: (t: string) => anthropic.enqueue({ blocks: [{ type: "text", text: t }] }),
      last: () => anthropic.messageRequests().at(-1)!.body,
    },
  } as const;

  function attach(r: AgentRunRequest, tag: string) {
    const action = r.action?.action;
    if (action?.case !== "userMessageAction" || !action.value.userMessage) throw new Error("not a user message");
    action.value.userMessage.selectedContext = create(SelectedContextSchema, {
      selectedImages: [
        { path: "shot.png", mimeType: "image/png", dataOrBlobId: { case: "data", value: PNG(tag) } },
        { path: "photo.jpg", mimeType: "image/jpeg", dataOrBlobId: { case: "blobId", value: blobId(JPEG(tag)) } },
      ],
    });
  }

  for (const e of ["openai-chat", "openai-responses", "anthropic"] as const) {
    it(`${e}: inline and blob images in the endpoint's shape, replayed byte for byte on the next turn`, async () => {
      const fake = fakes[e];
      const client = new CursorClient(gw.url);
      client.putBlob(JPEG(e));
      const conversationId = `images-${e}-${randomUUID()}`;
      fake.reply("a cat");
      const run = client.startRun({
        conversationId,
        modelId: e,
        text: "what is in these?",
        customize: (r) => attach(r, e),
      });
      expect(await run.done).to.deep.equal({ ok: true });
      expect(run.kvLog.filter((k) => k.case === "getBlobArgs").map((k) => k.blobId)).to.deep.equal([
        sha256Hex(JPEG(e)),
      ]);
      const first = fake.last() as Body;
      const history = (first.messages ?? first.input)!;
      const user = history.at(-1) as { role: string; content: Array<{ type: string }> };
      expect(user.role).to.equal("user");
      expect(user.content.slice(0, 2)).to.deep.equal(expectedParts(e));
      expect(user.content[2]).to.have.property("type", e === "openai-responses" ? "input_text" : "text");

      fake.reply("still a cat");
      const next = client.startRun({ conversationId, modelId: e, text: "sure?", checkpoint: run.lastCheckpoint()! });
      expect(await next.done).to.deep.equal({ ok: true });
      const second = fake.last() as Body;
      const after = (second.messages ?? second.input)!;
      expect(JSON.stringify(after.slice(0, history.length))).to.equal(JSON.stringify(history));
    });
  }

  it("after a restart the history, images included, is rebuilt from the checkpoint with the same bytes", async () => {
    const client = new CursorClient(gw.url);
    client.putBlob(JPEG("restart"));
    const conversationId = `images-restart-${randomUUID()}`;
    chat.enqueue({ text: "a dog" });
    const run = client.startRun({
      conversationId,
      modelId: "openai-chat",
      text: "and these?",
      customize: (r) => attach(r, "restart"),
    });
    expect(await run.done).to.deep.equal({ ok: true });
    const history = (chat.requests.at(-1)!.body as Body).messages!;
    await gw.stop();
    gw = await start();
    chat.enqueue({ text: "still a dog" });
    const again = new CursorClient(gw.url);
    for (const [id, data] of client.blobs) again.blobs.set(id, data);
    const next = again.startRun({
      conversationId,
      modelId: "openai-chat",
      text: "sure?",
      checkpoint: run.lastCheckpoint()!,
    });
    expect(await next.done).to.deep.equal({ ok: true });
    const after = (chat.requests.at(-1)!.body as Body).messages!;
    expect(JSON.stringify(after.slice(0, history.length))).to.equal(JSON.stringify(history));
  });

  it("a model configured with images: false refuses an attached image with invalid_argument naming it", async () => {
    const client = new CursorClient(gw.url);
    const before = chat.requests.length;
    const run = client.startRun({
      conversationId: `images-off-${randomUUID()}`,
      modelId: "text-only",
      text: "what is in this?",
      customize: (r) => attach(r, "openai-chat"),
    });
    const end = await run.done;
    expect(end).to.deep.include({ ok: false, code: "invalid_argument" });
    expect((end as { message: string }).message)
      .to.include('model "text-only"')
      .and.include("images: false");
    expect(chat.requests.length, "no provider call").to.equal(before);
  });
});
