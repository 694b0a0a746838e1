// The pass-through's usage reader (messages-api/passthrough-usage.ts): whatever the chunking of the answer, the
// bytes come out exactly as they went in and the usage is message_start's folded with message_delta's (or the
// JSON message's); an error answer, a message over the bound and a body that is not JSON report none.
import { expect } from "chai";
import fc from "fast-check";
import { Readable } from "node:stream";
import { MAX_OBSERVED_JSON_BYTES, usageObserver } from "../../messages-api/passthrough-usage.js";
import type { Usage } from "../../providers/types.js";

const record = (data: object) => `event: ${(data as { type: string }).type}\ndata: ${JSON.stringify(data)}\n\n`;
const SSE = [
  { type: "message_start", message: { usage: { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 20 } } },
  { type: "ping" },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "héllo ✓" } },
  { type: "content_block_stop", index: 0 },
  { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } },
  { type: "message_stop" },
]
  .map(record)
  .join("");
const SSE_USAGE: Usage = { inputTokens: 32, outputTokens: 9, cacheReadTokens: 20 };

/** Feeds `body` cut at `cuts` through the observer; returns what came out and the usage reported. */
async function observe(body: Buffer, cuts: number[], contentType: string) {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const chunks = [0, ...points, body.length]
    .slice(1)
    .map((end, i, ends) => body.subarray(i === 0 ? 0 : ends[i - 1], end));
  const usages: Usage[] = [];
  const out: Buffer[] = [];
  const observer = Readable.from(chunks.filter((c) => c.length > 0)).pipe(
    usageObserver(contentType, (u) => usages.push(u)),
  );
  for await (const chunk of observer) out.push(chunk as Buffer);
  return { bytes: Buffer.concat(out), usages };
}

describe("messages-api: reading a passed-through answer's usage", () => {
  it("forwards an SSE answer byte for byte at any chunking and folds its usage", async () => {
    const body = Buffer.from(SSE);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { maxLength: 12 }), async (cuts) => {
        const { bytes, usages } = await observe(body, cuts, "text/event-stream; charset=utf-8");
        expect(bytes.equals(body)).to.equal(true);
        expect(usages).to.deep.equal([SSE_USAGE]);
      }),
      { numRuns: 100 },
    );
  });

  it("reads a JSON message's usage, and none from a message over the bound or a body that is not JSON", async () => {
    const message = Buffer.from(JSON.stringify({ type: "message", usage: { input_tokens: 5, output_tokens: 2 } }));
    expect((await observe(message, [7, 19], "application/json")).usages).to.deep.equal([
      { inputTokens: 5, outputTokens: 2 },
    ]);
    const padding = "x".repeat(MAX_OBSERVED_JSON_BYTES);
    const huge = Buffer.from(JSON.stringify({ content: padding, usage: { input_tokens: 5, output_tokens: 2 } }));
    const over = await observe(huge, [1 << 20, 2 << 20], "application/json");
    expect([over.bytes.equals(huge), over.usages]).to.deep.equal([true, []]);
    expect((await observe(Buffer.from("<html>"), [], "text/html")).usages).to.deep.equal([]);
  });
});
