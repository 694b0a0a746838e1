// Cross-check: the stock connect-node client must accept our hand-written frames (docs/protocol/cursor-transport.md
// §2.4).
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { AgentServerMessageSchema, AgentService } from "../../proto/gen/agent/v1/agent_pb.js";
import { BidiService, ErrorDetails_Error, ErrorDetailsSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { encodeEndStream } from "../../transport/connect/end-stream.js";
import type { EndStream } from "../../cursor/errors.js";
import { encodeEnvelope, EnvelopeFlags } from "../../transport/connect/envelope.js";
import { RpcError, providerErrorDetails } from "../../cursor/errors.js";
import { unaryErrorBody } from "../../transport/connect/unary.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

function textDelta(text: string): Uint8Array {
  return toBinary(
    AgentServerMessageSchema,
    create(AgentServerMessageSchema, {
      message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text } } } },
    }),
  );
}

function serverStream(frames: Uint8Array[], end: EndStream, headers: Record<string, string> = {}): Handler {
  return (req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/connect+proto", ...headers });
      for (const frame of frames) res.write(frame);
      res.end(encodeEndStream(end));
    });
  };
}

describe("connect codecs against the stock Connect client", () => {
  let server: Server;
  let handler: Handler;
  let baseUrl: string;

  before(async () => {
    server = createServer((req, res) => handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const agent = () => createClient(AgentService, createConnectTransport({ baseUrl, httpVersion: "1.1" }));

  async function collect(): Promise<{ texts: string[]; error?: unknown }> {
    const texts: string[] = [];
    try {
      for await (const msg of agent().runSSE({ requestId: "r1" })) {
        const update = msg.message.case === "interactionUpdate" ? msg.message.value.message : undefined;
        if (update?.case === "textDelta") texts.push(update.value.text);
      }
    } catch (error) {
      return { texts, error };
    }
    return { texts };
  }

  it("reads data frames and ends cleanly on the success end-stream", async () => {
    handler = serverStream([encodeEnvelope(0, textDelta("hel")), encodeEnvelope(0, textDelta("lo"))], { ok: true });
    expect(await collect()).to.deep.equal({ texts: ["hel", "lo"] });
  });

  it("reads gzip-flagged frames mixed with plain ones", async () => {
    const zipped = encodeEnvelope(EnvelopeFlags.compressed, new Uint8Array(gzipSync(textDelta("zipped"))));
    handler = serverStream(
      [zipped, encodeEnvelope(0, textDelta("plain"))],
      { ok: true },
      { "connect-content-encoding": "gzip" },
    );
    expect(await collect()).to.deep.equal({ texts: ["zipped", "plain"] });
  });

  it("surfaces the error end-stream as Unavailable with decodable ErrorDetails", async () => {
    const error = new RpcError("provider error", "unavailable", providerErrorDetails("boom"));
    handler = serverStream([encodeEnvelope(0, textDelta("partial"))], { ok: false, error });
    const { texts, error: thrown } = await collect();
    expect(texts).to.deep.equal(["partial"]);
    expect(thrown).to.be.instanceOf(ConnectError);
    const stock = thrown as ConnectError;
    expect(stock.code).to.equal(Code.Unavailable);
    expect(stock.rawMessage).to.equal("provider error");
    const [details] = stock.findDetails(ErrorDetailsSchema);
    expect(details?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    expect(details?.details?.detail).to.equal("boom");
    expect(details?.details?.isRetryable).to.equal(true);
  });

  it("surfaces a canceled end-stream as Canceled", async () => {
    handler = serverStream([], { ok: false, error: new RpcError("run canceled", "canceled") });
    const { error } = await collect();
    expect((error as ConnectError).code).to.equal(Code.Canceled);
  });

  it("surfaces a unary error body with its details", async () => {
    const { status, body } = unaryErrorBody(
      new RpcError("bad append", "invalid_argument", providerErrorDetails("seq")),
    );
    handler = (req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(status, { "content-type": "application/json" }).end(body));
    };
    const bidi = createClient(BidiService, createConnectTransport({ baseUrl, httpVersion: "1.1" }));
    const thrown = await bidi.bidiAppend({ data: "", appendSeqno: 0n }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).to.be.instanceOf(ConnectError);
    expect((thrown as ConnectError).code).to.equal(Code.InvalidArgument);
    expect((thrown as ConnectError).findDetails(ErrorDetailsSchema)[0]?.details?.detail).to.equal("seq");
  });
});
