// Incremental reader of a model's raw argument JSON (docs/protocol/cursor-tools.md §5.6): while the text is still
// arriving it yields the decoded characters of one top-level string property as soon as they are known, and the full
// value of watched top-level string properties once each closes. It never fails: the complete text is parsed strictly
// once at the end, and that parse is the authority.

export type JsonStreamEvent =
  /** Decoded characters of the streamed property (never ends in half a surrogate pair). */
  | { kind: "text"; text: string }
  /** The streamed property's string closed. */
  | { kind: "text_end" }
  /** A watched property's string value is complete. */
  | { kind: "property"; name: string; value: string };

type Role = "key" | "stream" | "watch" | "skip";

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export class JsonStringPropertyStream {
  private depth = 0;
  private expectKey = false;
  private afterColon = false;
  private lastKey = "";
  private inString = false;
  private role: Role = "skip";
  private escape: "none" | "backslash" | "unicode" = "none";
  private hex = "";
  private value = "";
  /** Decoded stream text not yet handed out (held back only for a trailing high surrogate). */
  private pending = "";
  private events: JsonStreamEvent[] = [];

  constructor(
    private readonly streamKey: string,
    private readonly watchKeys: readonly string[] = [],
  ) {}

  push(chunk: string): JsonStreamEvent[] {
    for (const ch of chunk) {
      // for..of walks code points; a surrogate split across chunks arrives as two lone halves, which is fine
      // because decoded text is only handed out whole.
      if (this.inString) this.stringChar(ch);
      else this.structuralChar(ch);
    }
    this.flushText(false);
    const out = this.events;
    this.events = [];
    return out;
  }

  private structuralChar(ch: string): void {
    switch (ch) {
      case "{":
      case "[":
        this.depth++;
        if (this.depth === 1) this.expectKey = ch === "{";
        this.afterColon = false;
        break;
      case "}":
      case "]":
        this.depth--;
        break;
      case ":":
        if (this.depth === 1) this.afterColon = true;
        break;
      case ",":
        if (this.depth === 1) this.expectKey = true;
        break;
      case '"':
        this.startString();
        break;
    }
  }

  private startString(): void {
    this.inString = true;
    this.value = "";
    if (this.depth !== 1) this.role = "skip";
    else if (this.expectKey) this.role = "key";
    else if (!this.afterColon) this.role = "skip";
    else if (this.lastKey === this.streamKey) this.role = "stream";
    else this.role = this.watchKeys.includes(this.lastKey) ? "watch" : "skip";
    this.expectKey = false;
    this.afterColon = false;
  }

  private stringChar(ch: string): void {
    if (this.escape === "backslash") {
      if (ch === "u") {
        this.escape = "unicode";
        this.hex = "";
      } else {
        this.escape = "none";
        this.append(SIMPLE_ESCAPES[ch] ?? ch);
      }
    } else if (this.escape === "unicode") {
      this.hex += ch;
      if (this.hex.length === 4) {
        this.escape = "none";
        const code = Number.parseInt(this.hex, 16);
        this.append(Number.isNaN(code) ? this.hex : String.fromCharCode(code));
      }
    } else if (ch === "\\") {
      this.escape = "backslash";
    } else if (ch === '"') {
      this.endString();
    } else {
      this.append(ch);
    }
  }

  private append(decoded: string): void {
    if (this.role === "stream") this.pending += decoded;
    else if (this.role !== "skip") this.value += decoded;
  }

  private endString(): void {
    this.inString = false;
    if (this.role === "key") this.lastKey = this.value;
    else if (this.role === "watch") this.events.push({ kind: "property", name: this.lastKey, value: this.value });
    else if (this.role === "stream") {
      this.flushText(true);
      this.events.push({ kind: "text_end" });
    }
  }

  /** Hands out pending text; unless the string ended, a trailing high surrogate waits for its low half. */
  private flushText(ended: boolean): void {
    let text = this.pending;
    this.pending = "";
    if (!ended && text.length > 0 && isHighSurrogate(text.charCodeAt(text.length - 1))) {
      this.pending = text.slice(-1);
      text = text.slice(0, -1);
    }
    if (text !== "") this.events.push({ kind: "text", text });
  }
}
