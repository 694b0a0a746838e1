// The one writer of the CLI's stdin (docs/protocol/claude-code.md §4): user frames and control frames share a single
// queue, each write is one validated line, the next starts only after the previous was flushed, and end() (EOF) waits
// for the queue. A failed write rejects that write only; later ones fail fast once the stream is gone.
import type { Writable } from "node:stream";
import { type StdinFrame, encodeStdinLine } from "./frames.js";

export class StdinWriter {
  private tail: Promise<void> = Promise.resolve();
  private ended = false;
  private broken: Error | undefined;

  constructor(private readonly stream: Writable) {
    // EPIPE after the CLI died arrives here; without a listener it would crash the gateway.
    stream.on("error", (err: Error) => {
      this.broken ??= err;
    });
  }

  /** Validates now (a bad frame never reaches the queue), writes in order. */
  write(frame: StdinFrame): Promise<void> {
    if (this.ended) return Promise.reject(new Error("stdin is closed"));
    const line = encodeStdinLine(frame);
    return this.enqueue(() => this.writeLine(line));
  }

  /** EOF after everything queued so far. */
  end(): Promise<void> {
    if (this.ended) return this.tail;
    this.ended = true;
    return this.enqueue(
      () => new Promise<void>((resolve) => (this.stream.writableEnded ? resolve() : this.stream.end(resolve))),
    );
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.tail.then(task);
    this.tail = run.catch(() => {});
    return run;
  }

  private writeLine(line: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.broken || this.stream.destroyed || this.stream.writableEnded) {
        return reject(this.broken ?? new Error("stdin is not writable"));
      }
      this.stream.write(line, (err) => (err ? reject(err) : resolve()));
    });
  }
}
