import { fromBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ErrorDetails_Error, ErrorDetailsSchema } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { encodeEndStream, parseEndStream } from "../../transport/connect/end-stream.js";
import { EnvelopeReader } from "../../transport/connect/envelope.js";
import { httpStatusForCode } from "../../transport/connect/errors.js";
import { type ConnectCode, RpcError, providerErrorDetails } from "../../cursor/errors.js";
import { unaryErrorBody } from "../../transport/connect/unary.js";

function readSingleEnvelope(frame: Uint8Array) {
  const reader = new EnvelopeReader();
  const envelopes = reader.push(frame);
  reader.end();
  expect(envelopes).to.have.length(1);
  return envelopes[0]!;
}

const providerFailure = () => new RpcError("provider error", "unavailable", providerErrorDetails("429 from upstream"));

describe("connect end-stream", () => {
  it("success is one envelope with flag 0x02 and payload exactly {}", () => {
    const env = readSingleEnvelope(encodeEndStream({ ok: true }));
    expect(env.flags).to.equal(0x02);
    expect(Buffer.from(env.payload).toString("utf8")).to.equal("{}");
    expect(parseEndStream(env.payload)).to.deep.equal({});
  });

  it("error carries code, message and one aiserver.v1.ErrorDetails detail", () => {
    const env = readSingleEnvelope(encodeEndStream({ ok: false, error: providerFailure() }));
    expect(env.flags).to.equal(0x02);
    const json = JSON.parse(Buffer.from(env.payload).toString("utf8"));
    expect(Object.keys(json)).to.deep.equal(["error"]);
    expect(json.error.code).to.equal("unavailable");
    expect(json.error.message).to.equal("provider error");
    expect(json.error.details).to.have.length(1);
    expect(json.error.details[0].type).to.equal("aiserver.v1.ErrorDetails");
    expect(json.error.details[0].value)
      .to.be.a("string")
      .and.match(/^[A-Za-z0-9+/]+$/);
  });

  it("detail values are standard base64 without padding", () => {
    // Detail lengths 1..6 bytes cover every padding case of the encoded ErrorDetails.
    for (let n = 1; n <= 6; n++) {
      const err = new RpcError("x", "unavailable", providerErrorDetails("d".repeat(n)));
      const json = JSON.parse(
        Buffer.from(readSingleEnvelope(encodeEndStream({ ok: false, error: err })).payload).toString(),
      );
      const value: string = json.error.details[0].value;
      expect(value).not.to.contain("=");
      expect(value).not.to.match(/[-_]/);
    }
  });

  it("ErrorDetails decodes back with the provider-error fields of docs/protocol/cursor-transport.md §7.3", () => {
    const parsed = parseEndStream(readSingleEnvelope(encodeEndStream({ ok: false, error: providerFailure() })).payload);
    expect(parsed.error?.code).to.equal("unavailable");
    const details = fromBinary(ErrorDetailsSchema, parsed.error!.details[0]!.value);
    expect(details.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    expect(details.isExpected).to.equal(false);
    expect(details.details).to.include({
      title: "Server Error",
      detail: "429 from upstream",
      isRetryable: true,
      showRequestId: true,
      shouldShowImmediateError: false,
    });
  });

  it("an error without details (cancel) still names its code", () => {
    const parsed = parseEndStream(
      readSingleEnvelope(encodeEndStream({ ok: false, error: new RpcError("run canceled", "canceled") })).payload,
    );
    expect(parsed).to.deep.equal({ error: { code: "canceled", message: "run canceled", details: [] } });
  });

  it("parseEndStream rejects payloads that are not the Connect shape", () => {
    for (const bad of ["", "[]", "not json", '{"error":{}}', '{"error":{"code":"x","details":{}}}']) {
      expect(() => parseEndStream(new TextEncoder().encode(bad)), bad).to.throw(RpcError);
    }
  });
});

describe("connect unary errors", () => {
  it("maps codes to the Connect HTTP statuses", () => {
    const expected: Record<ConnectCode, number> = {
      canceled: 499,
      unknown: 500,
      invalid_argument: 400,
      deadline_exceeded: 504,
      not_found: 404,
      already_exists: 409,
      permission_denied: 403,
      resource_exhausted: 429,
      failed_precondition: 400,
      aborted: 409,
      out_of_range: 400,
      unimplemented: 501,
      internal: 500,
      unavailable: 503,
      data_loss: 500,
      unauthenticated: 401,
    };
    for (const [code, status] of Object.entries(expected))
      expect(httpStatusForCode(code as ConnectCode), code).to.equal(status);
  });

  it("unary error body is the bare error JSON with the mapped status", () => {
    const { status, body } = unaryErrorBody(providerFailure());
    expect(status).to.equal(503);
    const json = JSON.parse(body);
    expect(json.code).to.equal("unavailable");
    expect(json.message).to.equal("provider error");
    const details = fromBinary(ErrorDetailsSchema, new Uint8Array(Buffer.from(json.details[0].value, "base64")));
    expect(details.details?.detail).to.equal("429 from upstream");
  });
});
