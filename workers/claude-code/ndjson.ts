// Splits the CLI's stdout into NDJSON lines with a bound on line length: a line over the bound is skipped up to its
// newline and reported, so a runaway frame costs a report, not the process's memory. UTF-8 is decoded across chunk
// boundaries.
import { StringDecoder } from "node:string_decoder";

export type NdjsonItem =
  | { kind: "value"; value: unknown }
  /** A line that is not JSON, or longer than the bound (`length` in characters, `preview` its start). */
  | { kind: "bad"; reason: "not_json" | "too_long"; length: number; preview: string };

const previewChars = 200;

export class NdjsonSplitter {
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";
  /** Characters of an over-long line dropped so far; > 0 means "skip to the next newline". */
  private skipped = 0;
  private skippedPreview = "";

  constructor(
    private readonly maxLineChars: number,
    private readonly onItem: (item: NdjsonItem) => void,
  ) {}

  push(chunk: Buffer): void {
    this.consume(this.decoder.write(chunk));
  }

  /** End of stream: a last line without newline still counts. */
  end(): void {
    this.consume(this.decoder.end());
    if (this.skipped > 0) this.reportTooLong();
    else if (this.pending.trim() !== "") this.emitLine(this.pending);
    this.pending = "";
  }

  private consume(text: string): void {
    let start = 0;
    for (let nl = text.indexOf("\n", start); nl !== -1; nl = text.indexOf("\n", start)) {
      const piece = text.slice(start, nl);
      start = nl + 1;
      if (this.skipped > 0) {
        this.skipped += piece.length;
        this.reportTooLong();
        continue;
      }
      const line = this.pending + piece;
      this.pending = "";
      if (line.length > this.maxLineChars) {
        this.skipped = line.length;
        this.skippedPreview = line.slice(0, previewChars);
        this.reportTooLong();
      } else if (line.trim() !== "") {
        this.emitLine(line);
      }
    }
    const rest = text.slice(start);
    if (this.skipped > 0) {
      this.skipped += rest.length;
      return;
    }
    this.pending += rest;
    if (this.pending.length > this.maxLineChars) {
      this.skipped = this.pending.length;
      this.skippedPreview = this.pending.slice(0, previewChars);
      this.pending = "";
    }
  }

  private emitLine(line: string): void {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.onItem({ kind: "bad", reason: "not_json", length: line.length, preview: line.slice(0, previewChars) });
      return;
    }
    this.onItem({ kind: "value", value });
  }

  private reportTooLong(): void {
    this.onItem({ kind: "bad", reason: "too_long", length: this.skipped, preview: this.skippedPreview });
    this.skipped = 0;
    this.skippedPreview = "";
  }
}
