// Fuzzing the Connect port of a real gateway process, sent the way Cursor sends (no Origin, Host 127.0.0.1:port,
// Connect content types): BidiAppend bodies (random bytes, every AgentClientMessage oneof with random contents,
// truncated and oversized protobuf, gzip bombs, JSON with Object.prototype names) and RunSSE envelopes (random flags
// and lengths). Every answer is a well-formed Connect error (or the append's ACK), the process stays up and its RSS
// returns near its baseline. CI-sized here; `npm run fuzz` runs the same properties longer (docs/reliability.md).
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import fc from "fast-check";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  AgentClientMessageSchema,
  AgentMode,
  AgentRunRequestSchema,
  ConversationStateStructureSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiAppendRequestSchema, BidiRequestIdSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { EnvelopeReader, EnvelopeFlags } from "../../transport/connect/envelope.js";
import { parseEndStream } from "../../transport/connect/end-stream.js";
import { startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { bidiAppendPath, runSsePath } from "../support/connect-wire.js";
import { closedPort, httpCall, type RawResponse } from "../e2e/raw-http.js";
import {
  isAlive,
  isConnectCode,
  MiB,
  PROTOTYPE_NAMES,
  runs,
  SEED,
  settledRss,
  rssBytes,
  Tally,
} from "./fuzz-support.js";

/** Every case of AgentClientMessage's oneof, read from the generated schema: field number → case name. */
const ONEOF_CASES = AgentClientMessageSchema.oneofs.flatMap((o) =>
  o.fields.map((f) => [f.number, f.localName] as const),
);

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** One length-delimited field on the wire: the oneof case with whatever bytes as its message. */
function oneofField(fieldNumber: number, contents: Uint8Array): Uint8Array {
  return Uint8Array.from([...varint((fieldNumber << 3) | 2), ...varint(contents.length), ...contents]);
}

const requestIds = fc.oneof(fc.constantFrom(...PROTOTYPE_NAMES), fc.string({ maxLength: 40 }));

/** AgentClientMessage bytes: a oneof case with random contents, perhaps cut short or followed by junk. */
const clientMessageBytes = fc
  .record({
    field: fc.constantFrom(...ONEOF_CASES),
    // Short contents parse as a message more often (an empty one always does), so the run itself gets fuzzed too.
    contents: fc.oneof(
      fc.constant(new Uint8Array()),
      fc.uint8Array({ maxLength: 8 }),
      fc.uint8Array({ maxLength: 512 }),
    ),
    cut: fc.option(fc.nat(), { nil: undefined }),
    junk: fc.uint8Array({ maxLength: 16 }),
  })
  .map(({ field, contents, cut, junk }) => {
    const whole = Uint8Array.from([...oneofField(field[0], contents), ...junk]);
    return { kind: field[1], bytes: cut === undefined ? whole : whole.subarray(0, cut % (whole.length + 1)) };
  });

interface AppendCase {
  kind: string;
  body: Uint8Array;
  contentType: string;
  encoding?: string;
}

const binaryAppend: fc.Arbitrary<AppendCase> = fc
  .record({
    message: clientMessageBytes,
    requestId: requestIds,
    seqno: fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n),
    hex: fc.boolean(),
  })
  .map(({ message, requestId, seqno, hex }) => ({
    kind: `append:${message.kind}`,
    contentType: "application/proto",
    body: toBinary(
      BidiAppendRequestSchema,
      create(BidiAppendRequestSchema, {
        requestId: { requestId },
        appendSeqno: seqno,
        ...(hex ? { data: Buffer.from(message.bytes).toString("hex") } : { dataBinary: message.bytes }),
      }),
    ),
  }));

const randomBytesAppend: fc.Arbitrary<AppendCase> = fc
  .uint8Array({ maxLength: 4096 })
  .map((body) => ({ kind: "append:random-bytes", contentType: "application/proto", body }));

const prototypeKeyed = fc.dictionary(fc.constantFrom(...PROTOTYPE_NAMES), fc.jsonValue(), { maxKeys: 4 });

const jsonAppend: fc.Arbitrary<AppendCase> = fc
  .oneof(
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc
      .record({ requestId: fc.record({ requestId: requestIds }), data: fc.string(), extra: prototypeKeyed })
      .map((v) => JSON.stringify({ ...v, ...v.extra })),
    prototypeKeyed.map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
  )
  .map((text) => ({ kind: "append:json", contentType: "application/json", body: Buffer.from(text) }));

/** 80 MiB of zeros in ~80 KiB: decoded bounded or refused, never held whole. */
const GZIP_BOMB = gzipSync(Buffer.alloc(80 * MiB));

const gzipAppend: fc.Arbitrary<AppendCase> = fc
  .oneof(
    { arbitrary: fc.constant(GZIP_BOMB), weight: 1 },
    { arbitrary: fc.uint8Array({ maxLength: 512 }), weight: 5 },
    {
      arbitrary: fc.uint8Array({ maxLength: 512 }).map((b) => gzipSync(b).subarray(0, Math.max(0, b.length - 3))),
      weight: 5,
    },
  )
  .map((body) => ({ kind: "append:gzip", contentType: "application/proto", encoding: "gzip", body }));

/** Growth allowed after the warm-up round (allocator slack), and in all above the start (one round's buffers). */
const RSS_SLACK = 64 * MiB;
const RSS_CAP = 256 * MiB;

/** Oversized: a valid-looking BidiAppend over the per-request bound. */
const OVERSIZED = Buffer.alloc(65 * MiB, 0x41);

const MODEL = "fuzz-model";

/** The log lines of an unexpected exception that containment ended (engine/agent-service.ts, transport/app.ts). */
const CONTAINED = /"msg":"(run crashed|request stream failed|request failed unexpectedly)"/;

function runRequestBytes(): Uint8Array {
  const userMessage = { text: "hello", messageId: randomUUID(), mode: AgentMode.AGENT };
  const request = create(AgentRunRequestSchema, {
    conversationId: randomUUID(),
    conversationState: create(ConversationStateStructureSchema),
    action: { action: { case: "userMessageAction", value: { userMessage, requestContext: {} } } },
    modelDetails: { modelId: MODEL },
    requestedModel: { modelId: MODEL },
  });
  return toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } }),
  );
}

function cancelBytes(): Uint8Array {
  const action = { action: { case: "cancelAction" as const, value: { reason: "fuzz done" } } };
  return toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, { message: { case: "conversationAction", value: action } }),
  );
}

function appendOf(requestId: string, seqno: bigint, message: Uint8Array): AppendCase {
  const body = toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, { requestId: { requestId }, appendSeqno: seqno, dataBinary: message }),
  );
  return { kind: "live", contentType: "application/proto", body };
}

function assertUnaryAnswer(res: RawResponse, kind: string, tally: Tally): void {
  if (res.status === 200) {
    tally.add(`${kind.split(":")[0]}:200`);
    return;
  }
  const json = JSON.parse(res.body.toString("utf8")) as { code?: unknown; message?: unknown };
  expect(isConnectCode(json.code), `${kind}: ${res.status} ${res.body.toString("utf8").slice(0, 200)}`).to.equal(true);
  tally.add(`${String(json.code)}`);
}

describe("fuzz: the Connect port of a real gateway process", function () {
  this.timeout(300_000);
  let gateway: GatewayProcess;
  let dataDir: string;
  let baseline: number;
  /** The configured model's provider: takes each call and never answers, so a run stays live while it is fuzzed. */
  let silentProvider: Server;
  const headers = (contentType: string, encoding?: string): Record<string, string> => ({
    "content-type": contentType,
    "connect-protocol-version": "1",
    host: new URL(gateway.url).host,
    ...(encoding ? { "content-encoding": encoding } : {}),
  });

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "byok-fuzz-"));
    silentProvider = createServer(() => {});
    await new Promise<void>((resolve) => silentProvider.listen(0, "127.0.0.1", resolve));
    const providerPort = (silentProvider.address() as { port: number }).port;
    gateway = await startGatewayProcess({
      dataDir,
      config: {
        models: [
          {
            id: MODEL,
            provider: "openai-chat",
            baseUrl: `http://127.0.0.1:${providerPort}/v1`,
            apiKey: "sk-fuzz-provider-key",
            model: "m",
          },
        ],
      },
      upstream: `http://127.0.0.1:${await closedPort()}`,
    });
    baseline = rssBytes(gateway.pid);
  });
  after(async () => {
    await gateway?.stop();
    silentProvider?.closeAllConnections();
    silentProvider?.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  afterEach(async () => {
    expect(isAlive(gateway.pid), "gateway process alive").to.equal(true);
    // Containment caught something: the input found a bug, even though the process survived it.
    expect(gateway.stderrLines().filter((l) => CONTAINED.test(l))).to.deep.equal([]);
    expect((await fetch(new URL("/__byok/health", gateway.url))).status).to.equal(200);
  });

  const append = (c: AppendCase) =>
    httpCall(new URL(bidiAppendPath, gateway.url).href, {
      method: "POST",
      headers: headers(c.contentType, c.encoding),
      body: [c.body],
    });

  it(`BidiAppend: every AgentClientMessage oneof (${ONEOF_CASES.length}), random bytes, JSON, gzip: Connect errors`, async () => {
    const tally = new Tally("BidiAppend");
    await fc.assert(
      fc.asyncProperty(fc.oneof(binaryAppend, randomBytesAppend, jsonAppend, gzipAppend), async (c) => {
        assertUnaryAnswer(await append(c), c.kind, tally);
      }),
      { numRuns: runs(200), seed: SEED },
    );
    tally.print();
    expect(tally.total()).to.equal(runs(200));
  });

  it("a live run fed random AgentClientMessages at its next seqnos answers each with an ACK or a Connect error", async () => {
    const tally = new Tally("BidiAppend to a live run");
    const messages = fc.array(clientMessageBytes, { minLength: 1, maxLength: 6 });
    await fc.assert(
      fc.asyncProperty(messages, async (list) => {
        const requestId = randomUUID();
        const first = await append(appendOf(requestId, 1n, runRequestBytes()));
        expect(first.status, first.body.toString()).to.equal(200);
        for (const [i, m] of list.entries()) {
          assertUnaryAnswer(await append(appendOf(requestId, BigInt(i + 2), m.bytes)), `live:${m.kind}`, tally);
        }
        // Ends the run if nothing did: the request is canceled and its stream released.
        await append(appendOf(requestId, BigInt(list.length + 2), cancelBytes()));
      }),
      { numRuns: runs(60), seed: SEED },
    );
    tally.print();
  });

  it("BidiAppend: oversized bodies and gzip bombs are refused, and RSS returns near its baseline", async () => {
    const tally = new Tally("BidiAppend oversized");
    const round = async () => {
      assertUnaryAnswer(
        await append({ kind: "oversized", contentType: "application/proto", body: OVERSIZED }),
        "",
        tally,
      );
      const bomb = { kind: "bomb", contentType: "application/proto", encoding: "gzip", body: GZIP_BOMB };
      assertUnaryAnswer(await append(bomb), "", tally);
    };
    // The first large request grows the heap once; after that, more of them must not add up.
    await round();
    const warmed = await settledRss(gateway.pid, baseline, 0, 2_000);
    for (let i = 0; i < Math.max(2, Math.ceil(runs(200) / 100)); i++) await round();
    tally.print();
    const rss = await settledRss(gateway.pid, warmed, RSS_SLACK);
    const mib = (n: number) => `${(n / MiB).toFixed(0)} MiB`;
    console.log(`      RSS: at start ${mib(baseline)}, after one round ${mib(warmed)}, at the end ${mib(rss)}`);
    expect(rss, "RSS back near its level after the first round").to.be.at.most(warmed + RSS_SLACK);
    expect(rss, "RSS within the absolute bound").to.be.at.most(baseline + RSS_CAP);
  });

  it("RunSSE: random envelope flags, lengths and payloads end with a Connect error EndStream", async () => {
    const tally = new Tally("RunSSE");
    const envelope = fc
      .record({
        flags: fc.nat(255),
        declared: fc.option(fc.nat(0xffffffff), { nil: undefined }),
        payload: fc.oneof(
          fc.uint8Array({ maxLength: 256 }),
          requestIds.map((requestId) => toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId }))),
        ),
        trailing: fc.uint8Array({ maxLength: 8 }),
      })
      .map(({ flags, declared, payload, trailing }) => {
        const head = Buffer.alloc(5);
        head.writeUInt8(flags, 0);
        head.writeUInt32BE(declared ?? payload.length, 1);
        return Buffer.concat([head, payload, trailing]);
      });
    await fc.assert(
      fc.asyncProperty(fc.oneof(envelope, fc.uint8Array({ maxLength: 64 })), async (body) => {
        tally.add(await runSse(body));
      }),
      { numRuns: runs(200), seed: SEED },
    );
    tally.print();
  });

  /** Posts one RunSSE request; a stream left waiting for its run_request is given up after a moment. */
  async function runSse(body: Uint8Array): Promise<string> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 300);
    try {
      const res = await fetch(new URL(runSsePath, gateway.url), {
        method: "POST",
        headers: headers("application/connect+proto"),
        body,
        signal: controller.signal,
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      expect(res.status).to.equal(200);
      const frames = new EnvelopeReader({ maxPayloadBytes: MiB }).push(bytes);
      const last = frames.at(-1);
      expect(last && (last.flags & EnvelopeFlags.endStream) !== 0, "ends with an EndStream").to.equal(true);
      const code = parseEndStream(last!.payload).error?.code;
      expect(isConnectCode(code), `an error EndStream, got ${String(code)}`).to.equal(true);
      return code!;
    } catch (err) {
      if (controller.signal.aborted) return "waiting-stream";
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
});
