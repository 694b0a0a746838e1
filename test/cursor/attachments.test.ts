import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import fc from "fast-check";
import {
  referencedBlobs,
  renderAttachments,
  setFields,
  type TextAttachment,
  textAttachments,
  unusedContext,
} from "../../cursor/attachments.js";
import { blobId } from "../../cursor/blob-graph.js";
import { ConversationActionSchema, UserMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";

const utf8 = (s: string) => new TextEncoder().encode(s);

describe("cursor: attachments (docs/protocol/cursor-run.md §8.8)", () => {
  it("the layout is concatenative: rendering a list starts with rendering its prefix (prefix-stable)", () => {
    const attachment: fc.Arbitrary<TextAttachment> = fc.record(
      {
        tag: fc.constantFrom("file", "terminal", "link", "extra_context"),
        attrs: fc.array(fc.tuple(fc.constantFrom("path", "title", "url"), fc.string({ minLength: 1 })), {
          maxLength: 3,
        }),
        body: fc.string(),
      },
      { requiredKeys: ["tag", "attrs"] },
    );
    fc.assert(
      fc.property(fc.array(attachment, { maxLength: 6 }), fc.nat(6), (list, cut) => {
        const whole = renderAttachments(list);
        expect(whole.startsWith(renderAttachments(list.slice(0, cut)))).to.equal(true);
        expect(renderAttachments(list), "a pure function of the list").to.equal(whole);
      }),
    );
  });

  it("quotes attribute values as JSON, so a path cannot break out of its tag", () => {
    expect(renderAttachments([{ tag: "file", attrs: [["path", 'a" evil="1']], body: "x\n\n" }])).to.equal(
      '<file path="a\\" evil=\\"1">\nx\n</file>',
    );
  });

  it("names the blobs the message refers to, inline content winning over a blob", () => {
    const [text, link, diff, pr] = ["t", "l", "d", "p"].map((s) => blobId(utf8(s)));
    const m = create(UserMessageSchema, {
      textBlobId: text,
      selectedContext: {
        externalLinks: [
          { url: "u", blobId: link },
          { url: "v", pdfContent: "inline", blobId: blobId(utf8("x")) },
        ],
        gitPrDiffSelections: [{ prUrl: "p", blobId: diff }],
        selectedPullRequests: [{ number: 1, blobId: pr }],
      },
    });
    expect(referencedBlobs(m)).to.deep.equal([text, link, diff, pr]);
    const texts = new Map([link, diff, pr].map((id, i) => [Buffer.from(id!).toString("hex"), `blob ${i}`]));
    const rendered = textAttachments(m, (id) => texts.get(Buffer.from(id).toString("hex"))!);
    expect(rendered.map((a) => a.body)).to.deep.equal(["blob 1", "blob 2", "blob 0", "inline"]);
  });

  it("reports set fields it does not render, and unknown field numbers such as request_context_parts", () => {
    const m = create(UserMessageSchema, {
      text: "q",
      richText: "{}",
      selectedContext: { files: [{ path: "a", content: "b" }], consoleLogs: [{ message: "m" }] },
    });
    expect(unusedContext(m)).to.deep.equal(["user_message.rich_text", "selected_context.console_logs"]);
    // A field this proto does not declare (field 99, length-delimited) survives decoding as an unknown field.
    const known = toBinary(ConversationActionSchema, create(ConversationActionSchema, { triggeringAuthId: "a" }));
    const action = fromBinary(ConversationActionSchema, new Uint8Array([...known, 0x9a, 0x06, 0x01, 0x00]));
    expect(setFields(ConversationActionSchema, action, () => false, "action")).to.deep.equal(["action.#99"]);
  });
});
