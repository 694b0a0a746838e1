// BidiAppend (Connect unary, docs/protocol/cursor-transport.md §1, §3): one AgentClientMessage for a request_id at an
// append_seqno.
// `data` is the hex of the message (data_binary is accepted too). The ACK only confirms receipt; malformed input
// gets a Connect invalid_argument and changes nothing. Appends of a run served upstream are relayed there, those that
// waited locally for its run_request right after it.
import type { Context } from "koa";
import { create, fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import { AgentClientMessageSchema, type AgentClientMessage } from "../proto/gen/agent/v1/agent_pb.js";
import {
  BidiAppendRequestSchema,
  BidiAppendResponseSchema,
  type BidiAppendRequest,
} from "../proto/gen/aiserver/v1/aiserver_pb.js";
import { type AgentBackend, type HeldAppend, parentLinkOf } from "./agent-backend.js";
import { RpcError } from "../cursor/errors.js";
import { unaryErrorBody } from "./connect/unary.js";
import { type BodyBudget, decodeContentEncoding, readBody } from "./body.js";
import type { Relay } from "./relay.js";

export function bidiAppendHandler(
  service: AgentBackend,
  relay: Relay,
  bodies: { maxRequestBytes: number; budget: BodyBudget },
) {
  const limit = bodies.maxRequestBytes;
  return async (ctx: Context): Promise<void> => {
    const json = (ctx.get("content-type") || "").startsWith("application/json");
    const lease = bodies.budget.lease();
    try {
      const raw = await readBody(ctx.req, limit, lease);
      const body = await decodeContentEncoding(raw, ctx.get("content-encoding") || undefined, limit, lease);
      const request = decodeRequest(body, json);
      const requestId = request.requestId?.requestId;
      if (!requestId) throw new RpcError("BidiAppend carries no request_id", "invalid_argument");
      // The upstream gets the append byte for byte, as the client sent it, then what waited for it locally.
      const parent = parentLinkOf((name) => ctx.get(name));
      if ((await service.append(requestId, request.appendSeqno, decodeClientMessage(request), parent)) === "upstream") {
        const early = service.takeEarlyAppends(requestId);
        await relay.pass(ctx, raw);
        return await relay.replay(
          ctx,
          early.map((a) => encodeAppend(requestId, a, json)),
        );
      }
      ctx.status = 200;
      ctx.type = json ? "application/json" : "application/proto";
      ctx.body = json
        ? "{}"
        : Buffer.from(toBinary(BidiAppendResponseSchema, { $typeName: "aiserver.v1.BidiAppendResponse" }));
    } catch (e) {
      const err = e instanceof RpcError ? e : new RpcError(`BidiAppend failed: ${(e as Error).message}`, "internal");
      const { status, body } = unaryErrorBody(err);
      ctx.status = status;
      ctx.type = "application/json";
      ctx.body = body;
      // Refused before the body was read whole: close rather than read the rest only to discard it.
      if (!ctx.req.complete && ctx.req.httpVersionMajor === 1) ctx.set("connection", "close");
    } finally {
      lease.release();
    }
  };
}

/** A held append as its own BidiAppend body, in the encoding of the append that routed the request. */
function encodeAppend(requestId: string, held: HeldAppend, json: boolean): Uint8Array {
  const append = create(BidiAppendRequestSchema, {
    data: Buffer.from(toBinary(AgentClientMessageSchema, held.message)).toString("hex"),
    requestId: { requestId },
    appendSeqno: held.seqno,
  });
  return json
    ? new TextEncoder().encode(toJsonString(BidiAppendRequestSchema, append))
    : toBinary(BidiAppendRequestSchema, append);
}

function decodeRequest(body: Uint8Array, json: boolean): BidiAppendRequest {
  try {
    return json
      ? fromJsonString(BidiAppendRequestSchema, new TextDecoder().decode(body))
      : fromBinary(BidiAppendRequestSchema, body);
  } catch (e) {
    throw new RpcError(`BidiAppend body is not a valid BidiAppendRequest: ${(e as Error).message}`, "invalid_argument");
  }
}

function decodeClientMessage(request: BidiAppendRequest): AgentClientMessage {
  let bytes: Uint8Array;
  if (request.data) {
    if (request.data.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(request.data)) {
      throw new RpcError("BidiAppend data is not valid hex", "invalid_argument");
    }
    bytes = Buffer.from(request.data, "hex");
  } else if (request.dataBinary.length) {
    bytes = request.dataBinary;
  } else {
    throw new RpcError("BidiAppend carries no data", "invalid_argument");
  }
  try {
    return fromBinary(AgentClientMessageSchema, bytes);
  } catch (e) {
    throw new RpcError(
      `BidiAppend data is not a valid AgentClientMessage: ${(e as Error).message}`,
      "invalid_argument",
    );
  }
}
