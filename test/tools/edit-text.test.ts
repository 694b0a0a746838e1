import { expect } from "chai";
import fc from "fast-check";
import { LfStream, diffStats, normalizeLf, replaceExact } from "../../cursor/tools/edit-text.js";

describe("edit text rules", () => {
  it("normalises CRLF and lone CR to LF", () => {
    expect(normalizeLf("a\r\nb\rc\n\r\n")).to.equal("a\nb\nc\n\n");
  });

  it("streaming holds a CR at the end of a chunk: a split CRLF gives one LF, a final lone CR gives one", () => {
    const lf = new LfStream();
    const out = [lf.push("a\r"), lf.push("\nb\r"), lf.push("c\r"), lf.end()];
    expect(out).to.deep.equal(["a", "\nb", "\nc", "\n"]);
  });

  it("streaming equals whole-text normalisation for any chunking", () => {
    const piece = fc.constantFrom("\r", "\n", "\r\n", "x", "é", "");
    fc.assert(
      fc.property(
        fc.array(
          fc.array(piece, { maxLength: 5 }).map((p) => p.join("")),
          { maxLength: 8 },
        ),
        (chunks) => {
          const lf = new LfStream();
          const streamed = chunks.map((c) => lf.push(c)).join("") + lf.end();
          expect(streamed).to.equal(normalizeLf(chunks.join("")));
        },
      ),
    );
  });

  describe("replaceExact", () => {
    it("replaces a unique match and keeps $-sequences in new_string literal", () => {
      const r = replaceExact("let a = 1;\nlet b = 2;\n", "a = 1", "a = '$&$1'", false);
      expect(r).to.deep.equal({ ok: true, after: "let a = '$&$1';\nlet b = 2;\n", replacements: 1 });
    });

    it("matches on LF-normalised text: a CRLF file matches an LF old_string and is written back as LF", () => {
      const r = replaceExact("one\r\ntwo\r\nthree\r\n", "one\ntwo", "1\r\n2", false);
      expect(r).to.deep.equal({ ok: true, after: "1\n2\nthree\n", replacements: 1 });
    });

    it("reports not found, ambiguous (with the count) and an empty old_string", () => {
      expect(replaceExact("abc", "x", "y", false)).to.deep.equal({ ok: false, reason: "not_found", occurrences: 0 });
      expect(replaceExact("a a a", "a", "b", false)).to.deep.equal({ ok: false, reason: "ambiguous", occurrences: 3 });
      expect(replaceExact("abc", "", "y", true)).to.deep.include({ ok: false, reason: "empty_old_string" });
    });

    it("replace_all replaces every non-overlapping occurrence", () => {
      expect(replaceExact("aaaa", "aa", "b", true)).to.deep.equal({ ok: true, after: "bb", replacements: 2 });
    });
  });

  describe("diffStats", () => {
    it("counts added and removed lines from the unified diff", () => {
      const stats = diffStats("src/a.ts", "one\ntwo\nthree\n", "one\n2\nthree\nfour\n");
      expect(stats.linesAdded).to.equal(2);
      expect(stats.linesRemoved).to.equal(1);
      expect(stats.diff).to.equal(
        ["--- src/a.ts", "+++ src/a.ts", "@@ -1,3 +1,4 @@", " one", "-two", "+2", " three", "+four", ""].join("\n"),
      );
    });

    it("a new file counts every line as added; identical texts give an empty diff", () => {
      expect(diffStats("n.txt", "", "a\nb\nc\n")).to.include({ linesAdded: 3, linesRemoved: 0 });
      expect(diffStats("n.txt", "same\n", "same\n")).to.deep.equal({ diff: "", linesAdded: 0, linesRemoved: 0 });
    });
  });
});
