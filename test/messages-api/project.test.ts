// The request projection (messages-api/project.ts, schema.ts) for what Claude Code may add to a turn: user and
// tool-result images (base64 with a media type, or a URL) with their size bound, tool_choice and stop_sequences onto the provider
// vocabulary.
import { expect } from "chai";
import { projectRequest } from "../../messages-api/project.js";
import { MAX_IMAGE_BYTES, messagesRequestSchema } from "../../messages-api/schema.js";
import { createSignatureCodec } from "../../messages-api/signature.js";

const codec = createSignatureCodec(Buffer.alloc(32, 1));
const target = { model: "gpt-4.1" };
const base = { model: "m", max_tokens: 100 };

const project = (body: object) => projectRequest(messagesRequestSchema.parse({ ...base, ...body }), target, codec);

describe("messages-api: projecting images, tool_choice and stop_sequences", () => {
  it("carries user images ahead of the text, in their order", () => {
    const request = project({
      messages: [
        {
          role: "user",
          content: [
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0K" } },
            { type: "text", text: "and this one?" },
            { type: "image", source: { type: "url", url: "https://example.com/b.webp" } },
          ],
        },
      ],
    });
    expect(request.messages).to.deep.equal([
      {
        role: "user",
        content: "and this one?",
        images: [
          { type: "base64", mediaType: "image/png", data: "iVBORw0K" },
          { type: "url", url: "https://example.com/b.webp" },
        ],
      },
    ]);
    const imageOnly = project({
      messages: [
        { role: "user", content: [{ type: "image", source: { type: "url", url: "http://example.com/a.gif" } }] },
      ],
    });
    expect(imageOnly.messages).to.deep.equal([
      { role: "user", content: "", images: [{ type: "url", url: "http://example.com/a.gif" }] },
    ]);
  });

  it("keeps a tool result's images beside its text, error results included", () => {
    const png = { type: "base64", media_type: "image/png", data: "iVBORw0K" };
    const request = project({
      messages: [
        { role: "user", content: "read it" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: { path: "a.png" } }] },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "t1",
              is_error: true,
              content: [
                { type: "text", text: "partly " },
                { type: "image", source: png },
                { type: "text", text: "read" },
              ],
            },
          ],
        },
      ],
    });
    expect(request.messages[2]).to.deep.equal({
      role: "tool",
      toolCallId: "t1",
      content: "Error: partly read",
      images: [{ type: "base64", mediaType: "image/png", data: "iVBORw0K" }],
    });
  });

  it("refuses an image over the bound, an unknown media type and a non-http URL", () => {
    const image = (source: object) => ({
      ...base,
      messages: [{ role: "user", content: [{ type: "image", source }] }],
    });
    // Every 4 base64 characters are 3 bytes: the largest whole-quantum image that fits, and one quantum more.
    const quanta = Math.floor(MAX_IMAGE_BYTES / 3);
    const tooBig = "A".repeat((quanta + 1) * 4);
    const refusals = [
      { type: "base64", media_type: "image/png", data: tooBig },
      { type: "base64", media_type: "image/tiff", data: "AAAA" },
      { type: "url", url: "file:///etc/passwd" },
      { type: "file", file_id: "file_1" },
    ].map((source) => messagesRequestSchema.safeParse(image(source)));
    expect(refusals.map((r) => r.success)).to.deep.equal([false, false, false, false]);
    expect(refusals[0]!.error!.issues[0]!.message).to.include(`exceeds ${MAX_IMAGE_BYTES} bytes`);
    const atLimit = "A".repeat(quanta * 4);
    expect(
      messagesRequestSchema.safeParse(image({ type: "base64", media_type: "image/png", data: atLimit })).success,
    ).to.equal(true);
  });

  it("maps tool_choice auto / any / none / tool and passes stop_sequences", () => {
    const messages = [{ role: "user", content: "x" }];
    const choices = [{ type: "auto" }, { type: "any" }, { type: "none" }, { type: "tool", name: "Bash" }].map(
      (tool_choice) => project({ messages, tool_choice }).toolChoice,
    );
    expect(choices).to.deep.equal(["auto", "required", "none", { name: "Bash" }]);
    expect(project({ messages, stop_sequences: ["\n\nHuman:"] }).stopSequences).to.deep.equal(["\n\nHuman:"]);
    expect(project({ messages, stop_sequences: [] })).not.to.have.property("stopSequences");
    expect(messagesRequestSchema.safeParse({ ...base, messages, tool_choice: { type: "tool" } }).success).to.equal(
      false,
    );
  });
});
