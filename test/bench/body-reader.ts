// The relay scenario's client for one large body: a plain socket reading into one reused buffer (`onread`), its
// HTTP/1.1 response decoded just enough to count the body's bytes. node:http's client allocates a buffer per read
// and copies every body chunk again; 10 MB of those set off the bench's own full collections inside the very
// readings it times, on either side (docs/performance.md, scenario 5). Only what the scenario's upstream sends is
// understood: a 200 head, then a chunked body (as both relays forward it) or one of a stated content-length.
import { connect } from "node:net";

const READ_BUFFER = 64 * 1024;
const HEAD_END = Buffer.from("\r\n\r\n");
/** A chunk-size line is a few hex digits and maybe an extension; longer means a broken response. */
const MAX_SIZE_LINE = 256;

type Body =
  | { kind: "head"; head: Buffer }
  | { kind: "size"; line: string }
  | { kind: "data"; left: number }
  | { kind: "crlf"; left: number }
  | { kind: "length"; left: number }
  | { kind: "done" };

/** GETs `path` from `base` (http://host:port) and resolves with the number of body bytes, decoded. */
export function readBodyBytes(base: string, path: string): Promise<number> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    let state: Body = { kind: "head", head: Buffer.alloc(0) };
    let received = 0;
    const fail = (message: string) => {
      socket.destroy();
      reject(new Error(`GET ${url.href}: ${message}`));
    };
    const feed = (bytes: Buffer): void => {
      let at = 0;
      while (at < bytes.length && state.kind !== "done") {
        if (state.kind === "head") {
          const head = Buffer.concat([state.head, bytes.subarray(at)]);
          const end = head.indexOf(HEAD_END);
          if (end < 0) return void (state = { kind: "head", head });
          const text = head.subarray(0, end).toString("latin1");
          if (!/^HTTP\/1\.1 200 /.test(text)) return fail(`answered ${text.split("\r\n")[0]}`);
          const length = /\r\ncontent-length: *(\d+)/i.exec(text);
          state = length ? { kind: "length", left: Number(length[1]) } : { kind: "size", line: "" };
          // What followed the head in this read is body: feed it on from there.
          at = bytes.length - (head.length - end - HEAD_END.length);
        } else if (state.kind === "size") {
          const nl = bytes.indexOf(10, at);
          const line = state.line + bytes.subarray(at, nl < 0 ? bytes.length : nl).toString("latin1");
          if (line.length > MAX_SIZE_LINE) return fail("chunk-size line too long");
          if (nl < 0) return void (state = { kind: "size", line });
          at = nl + 1;
          const size = Number.parseInt(line, 16);
          if (Number.isNaN(size)) return fail(`bad chunk-size line ${JSON.stringify(line)}`);
          state = size === 0 ? { kind: "done" } : { kind: "data", left: size };
        } else if (state.kind === "data" || state.kind === "length") {
          const take = Math.min(state.left, bytes.length - at);
          received += take;
          at += take;
          const left = state.left - take;
          if (state.kind === "length") state = left === 0 ? { kind: "done" } : { kind: "length", left };
          else state = left === 0 ? { kind: "crlf", left: 2 } : { kind: "data", left };
        } else {
          const take = Math.min(state.left, bytes.length - at);
          at += take;
          state = state.left - take === 0 ? { kind: "size", line: "" } : { kind: "crlf", left: state.left - take };
        }
      }
      if (state.kind === "done") {
        socket.end();
        resolve(received);
      }
    };
    const readBuffer = Buffer.allocUnsafe(READ_BUFFER);
    const socket = connect({
      host: url.hostname,
      port: Number(url.port),
      onread: {
        buffer: readBuffer,
        callback: (n: number) => {
          feed(readBuffer.subarray(0, n));
          return true;
        },
      },
    });
    socket.once("error", (err) => fail(err.message));
    socket.once("end", () => {
      if (state.kind !== "done") fail("the connection ended before the body did");
    });
    socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
  });
}
