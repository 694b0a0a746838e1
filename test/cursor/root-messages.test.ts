// A user root with attached images round-trips through its checkpoint blob (docs/protocol/cursor-run.md §4.2, §8.8.1),
// so a gateway that reloads the history from the client's checkpoint sends the same image bytes again.
import { expect } from "chai";
import { decodeRootMessage, encodeRootMessage } from "../../cursor/root-messages.js";
import type { CanonicalMessage } from "../../providers/messages.js";

describe("cursor/root-messages: user images", () => {
  it("a runtime message with images decodes to the same message, images first in the AI SDK shape", () => {
    const m: CanonicalMessage = {
      role: "user",
      content: "<user_query>\nwhat is this?\n</user_query>",
      origin: "runtime",
      eventId: "run-request:r1",
      images: [
        { type: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" },
        { type: "base64", mediaType: "image/jpeg", data: "/9j/4AAQ" },
      ],
    };
    const bytes = encodeRootMessage(m);
    const json = JSON.parse(new TextDecoder().decode(bytes)) as { content: Array<{ type: string }> };
    expect(json.content.map((p) => p.type)).to.deep.equal(["image", "image", "text"]);
    expect(decodeRootMessage(bytes)).to.deep.equal(m);
  });

  it("a message without images keeps its plain string content", () => {
    const m: CanonicalMessage = { role: "user", content: "hi", origin: "user" };
    expect(new TextDecoder().decode(encodeRootMessage(m))).to.equal(
      '{"role":"user","content":"hi","providerOptions":{"byok":{"origin":"user"}}}',
    );
    expect(decodeRootMessage(encodeRootMessage(m))).to.deep.equal(m);
  });
});
