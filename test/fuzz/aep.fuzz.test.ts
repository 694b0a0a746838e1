// Fuzzing the AEP v1 WebSocket of a real gateway process: every Object.prototype name as kind, control action, answer
// id and field; random JSON; random envelopes; binary and oversized frames, before and after init. Every envelope the
// gateway sends is well-formed AEP (errors with a known code), a frame with a bad kind gets INVALID_MESSAGE, the
// connection still answers ping, the process stays up and its RSS returns near its baseline. The worker command is
// `false`, so an input that gets through ends in a worker error instead of a model call.
import { expect } from "chai";
import fc from "fast-check";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { ERROR_CODES, type ServerEnvelope } from "../../aep/wire/envelope.js";
import { startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { isAlive, MiB, PROTOTYPE_NAMES, runs, rssBytes, SEED, settledRss, Tally } from "./fuzz-support.js";

const KINDS = [
  "init",
  "input",
  "permission_response",
  "question_response",
  "elicitation_response",
  "ping",
  "control",
  "worker_command",
];
const ACTIONS = ["terminate", "delete", "gc", "reset", "cd", "stop"];
const names = fc.oneof(fc.constantFrom(...PROTOTYPE_NAMES), fc.string({ maxLength: 12 }));
const prototypeKeyed = fc.dictionary(fc.constantFrom(...PROTOTYPE_NAMES), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 3,
});

/** Data for a kind: its real fields filled with hostile names, or anything at all. */
const data = fc.oneof(
  prototypeKeyed,
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({ id: names, allowed: fc.boolean(), answers: prototypeKeyed, action: fc.constantFrom(...ACTIONS) }),
  fc.record({ action: names, workdir: names, reason: names }),
  fc.record({ content: names, metadata: prototypeKeyed }),
);

interface Frame {
  kind: string;
  text: string | Buffer;
  /** The frame names a kind that does not exist: it must get NOT_SUPPORTED. */
  badKind: boolean;
}

const envelopeFrame: fc.Arbitrary<Frame> = fc
  .record({
    kind: fc.oneof(fc.constantFrom(...PROTOTYPE_NAMES), fc.constantFrom(...KINDS)),
    data,
    id: fc.oneof(names, fc.constant("cli_1")),
    extra: prototypeKeyed,
  })
  .map(({ kind, data, id, extra }) => ({
    kind: KINDS.includes(kind) ? kind : "prototype-kind",
    badKind: !KINDS.includes(kind),
    text: JSON.stringify({ ...extra, version: "aep/v1", id: id || "x", event: { type: kind, data } }),
  }));

const junkFrame: fc.Arbitrary<Frame> = fc.oneof(
  fc.jsonValue().map((v) => ({ kind: "random-json", badKind: false, text: JSON.stringify(v) })),
  fc.string({ maxLength: 64 }).map((text) => ({ kind: "random-text", badKind: false, text })),
  fc.uint8Array({ maxLength: 64 }).map((b) => ({ kind: "binary", badKind: false, text: Buffer.from(b) })),
);

/** One client connection that records and checks every envelope it gets. */
class Conn {
  readonly received: ServerEnvelope[] = [];
  closed = false;
  private waiters: Array<(e: ServerEnvelope) => boolean> = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (raw) => {
      const e = JSON.parse(raw.toString()) as ServerEnvelope;
      expect(e.version).to.equal("aep/v1");
      expect(e.seq).to.be.a("number");
      expect(e.event.type).to.be.a("string");
      if (e.event.type === "error") expect(ERROR_CODES).to.include(e.event.data.code);
      this.received.push(e);
      this.waiters = this.waiters.filter((w) => !w(e));
    });
    ws.on("close", () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w(undefined as never);
    });
  }

  /** With the gateway token as a Bearer header, so inits with random tokens are never counted as wrong ones. */
  static async open(url: string, token: string): Promise<Conn> {
    const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    return new Conn(ws);
  }

  /** The first envelope from now on that matches, or undefined when the socket closes or time runs out. */
  next(match: (e: ServerEnvelope) => boolean, timeoutMs = 5_000): Promise<ServerEnvelope | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), timeoutMs);
      this.waiters.push((e) => {
        if (e !== undefined && !match(e)) return false;
        clearTimeout(timer);
        resolve(e);
        return true;
      });
    });
  }
}

describe("fuzz: the AEP WebSocket of a real gateway process", function () {
  this.timeout(300_000);
  let gateway: GatewayProcess;
  let root: string;
  let url: string;
  let token: string;
  let baseline: number;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "byok-fuzz-aep-"));
    gateway = await startGatewayProcess({
      dataDir: join(root, "data"),
      config: { models: [], aep: { port: 0, workdir: root }, workers: { "claude-code": { command: "false" } } },
    });
    const line = gateway.stdoutLines().find((l) => l.startsWith("byok-gateway AEP v1 listening on "));
    url = line!.slice("byok-gateway AEP v1 listening on ".length).trim();
    token = (await readFile(join(root, "data", "gateway-token"), "utf8")).trim();
    baseline = rssBytes(gateway.pid);
  });
  after(async () => {
    await gateway?.stop();
    await rm(root, { recursive: true, force: true });
  });
  afterEach(() => {
    expect(isAlive(gateway.pid), "gateway process alive").to.equal(true);
    // Containment caught something (aep/listener.ts, aep/session.ts): the input found a bug all the same.
    expect(gateway.stderrLines().filter((l) => /"msg":"aep [^"]* failed"/.test(l))).to.deep.equal([]);
  });

  for (const initialised of [false, true]) {
    it(`hostile frames ${initialised ? "in a session" : "before init"} get errors; the connection still answers`, async () => {
      const where = initialised ? "in a session" : "before init";
      const tally = new Tally(`AEP frames ${where}`);
      const errors = new Tally(`AEP errors ${where}`);
      let conn: Conn | undefined;
      const connect = async () => {
        const c = await Conn.open(url, token);
        if (initialised) {
          c.ws.send(JSON.stringify({ version: "aep/v1", id: "i", event: { type: "init", data: { workdir: root } } }));
          expect(await c.next((e) => e.event.type === "state"), "init answered").not.to.equal(undefined);
        }
        return c;
      };
      await fc.assert(
        fc.asyncProperty(fc.oneof(envelopeFrame, junkFrame), async (frame) => {
          if (!conn || conn.closed) conn = await connect();
          const c = conn;
          const from = c.received.length;
          // Matched by the frame's id: a late error of an earlier input (its ledger write is async) may come first.
          const id = frame.badKind ? (JSON.parse(frame.text.toString()) as { id: string }).id || "x" : undefined;
          const error =
            id === undefined
              ? undefined
              : c.next(
                  (e) =>
                    e.event.type === "error" &&
                    e.event.data.client_message_id === id &&
                    e.event.data.code === "NOT_SUPPORTED",
                );
          c.ws.send(frame.text);
          if (id !== undefined)
            expect(await error, `NOT_SUPPORTED for ${frame.text.toString()}`).to.not.equal(undefined);
          const pong = c.next((e) => e.event.type === "pong");
          if (!c.closed) c.ws.send(JSON.stringify({ version: "aep/v1", id: "ping", event: { type: "ping" } }));
          await pong;
          tally.add(c.closed ? `${frame.kind}:closed` : frame.kind);
          if (!c.closed) expect(await pong, "ping answered after the frame").not.to.equal(undefined);
          for (const e of c.received.slice(from)) if (e.event.type === "error") errors.add(e.event.data.code);
        }),
        { numRuns: runs(300), seed: SEED },
      );
      tally.print();
      errors.print();
      conn?.ws.close();
    });
  }

  it("oversized frames close that connection only; RSS returns near its baseline", async () => {
    const big = Buffer.alloc(2 * MiB, 0x61);
    for (let i = 0; i < Math.max(5, Math.ceil(runs(300) / 30)); i++) {
      const c = await Conn.open(url, token);
      c.ws.send(big.toString());
      await new Promise((resolve) => c.ws.once("close", resolve));
    }
    const c = await Conn.open(url, token);
    c.ws.send(JSON.stringify({ version: "aep/v1", id: "p", event: { type: "ping" } }));
    expect(await c.next((e) => e.event.type === "pong")).not.to.equal(undefined);
    c.ws.close();
    const rss = await settledRss(gateway.pid, baseline, 64 * MiB);
    console.log(`      RSS: at start ${(baseline / MiB).toFixed(0)} MiB, at the end ${(rss / MiB).toFixed(0)} MiB`);
    expect(rss).to.be.at.most(baseline + 64 * MiB);
  });
});
