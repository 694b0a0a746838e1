import { expect } from "chai";
import fc from "fast-check";
import { JsonStringPropertyStream } from "../../cursor/tools/json-stream.js";
import type { JsonStreamEvent } from "../../cursor/tools/json-stream.js";

/** Decoded stream text, the watched values, and whether any text event ended in a lone high surrogate. */
function feed(chunks: string[], key = "contents", watch = ["path"]) {
  const stream = new JsonStringPropertyStream(key, watch);
  const events: JsonStreamEvent[] = chunks.flatMap((c) => stream.push(c));
  const texts = events.flatMap((e) => (e.kind === "text" ? [e.text] : []));
  return {
    events,
    text: texts.join(""),
    properties: events.flatMap((e) => (e.kind === "property" ? [[e.name, e.value]] : [])),
    brokenSurrogate: texts.some((t) => /[\ud800-\udbff]$/.test(t) || /^[\udc00-\udfff]/.test(t)),
  };
}

const contents = 'line "one"\n\tline two é 😀 \\ / done';
const raw = JSON.stringify({
  path: "src/a\u00e9.ts",
  nested: { contents: "not me", list: ["contents", "}"] },
  contents,
});
// Force the escapes the brief names, including \u00e9 and a surrogate pair written as two \u escapes.
const escaped = raw.replace("é 😀", "\\u00e9 \\ud83d\\ude00");

describe("JsonStringPropertyStream", () => {
  it('decodes \\n, \\", \\u00e9 and a \\u surrogate pair of one top-level property', () => {
    const out = feed([escaped]);
    expect(out.text).to.equal(contents);
    expect(out.properties).to.deep.equal([["path", "src/aé.ts"]]);
    expect(out.events.at(-1)).to.deep.equal({ kind: "text_end" });
  });

  it("gives the same decoded text when split at every position, never half a surrogate pair", () => {
    for (let i = 0; i <= escaped.length; i++) {
      for (let j = i; j <= escaped.length; j += 7) {
        const out = feed([escaped.slice(0, i), escaped.slice(i, j), escaped.slice(j)]);
        expect(out.text, `split at ${i}/${j}`).to.equal(contents);
        expect(out.brokenSurrogate, `split at ${i}/${j}`).to.equal(false);
        expect(out.properties).to.deep.equal([["path", "src/aé.ts"]]);
      }
    }
  });

  it("handles a raw (unescaped) astral character split between its UTF-16 halves", () => {
    const text = JSON.stringify({ contents: "a😀b" });
    const cut = text.indexOf("😀") + 1;
    const first = feed([text.slice(0, cut)]);
    expect(first.text).to.equal("a");
    const out = feed([text.slice(0, cut), text.slice(cut)]);
    expect(out.text).to.equal("a😀b");
    expect(out.brokenSurrogate).to.equal(false);
  });

  it("publishes content before path when content comes first (no holding back, docs/protocol/cursor-tools.md §5.6)", () => {
    const out = feed(['{"contents":"hel', 'lo","pa', 'th":"x.ts"}']);
    expect(out.events.map((e) => e.kind)).to.deep.equal(["text", "text", "text_end", "property"]);
  });

  it("matches JSON.parse for arbitrary strings and arbitrary chunkings", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme" }),
        fc.string(),
        fc.array(fc.nat(), { maxLength: 6 }),
        (body, path, cuts) => {
          const text = JSON.stringify({ other: [1, { contents: "x" }], path, contents: body, tail: true });
          const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points].map((p, k, all) => text.slice(p, all[k + 1] ?? text.length));
          const out = feed(chunks);
          expect(out.text).to.equal(body);
          expect(out.properties).to.deep.equal([["path", path]]);
        },
      ),
      { numRuns: 300 },
    );
  });
});
