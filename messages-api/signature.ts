// The opaque `signature` / `data` of the thinking blocks this endpoint returns: an endpoint's replay state (Responses
// encrypted reasoning items, DeepSeek reasoning_content), HMAC-protected with a key only this gateway holds, so that
// what Claude Code sends back can be trusted byte for byte. Anything that does not verify is not ours: the caller
// drops it from the replay rather than failing the user's turn.
import { createHmac, timingSafeEqual } from "node:crypto";
import * as z from "zod";
import { type ReplayState, replayStateSchema } from "../providers/types.js";

const PREFIX = "byok1";

export interface SignatureCodec {
  /** Signs a display-only thinking block (it carries no replay state). */
  signDisplay(): string;
  signReplay(state: ReplayState): string;
  /** The replay state a signature carries, or undefined when it is forged, foreign or display-only. */
  openReplay(signature: string): ReplayState | undefined;
}

export function createSignatureCodec(key: Uint8Array): SignatureCodec {
  const mac = (body: string): Buffer => createHmac("sha256", key).update(`${PREFIX}.${body}`).digest();
  const seal = (payload: object): string => {
    const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
    return `${PREFIX}.${body}.${mac(body).toString("base64url")}`;
  };
  return {
    signDisplay: () => seal({ display: true }),
    signReplay: (state) => seal({ replay: state }),
    openReplay(signature) {
      const [prefix, body, tag, ...rest] = signature.split(".");
      if (prefix !== PREFIX || body === undefined || tag === undefined || rest.length > 0) return undefined;
      const expected = mac(body);
      const given = Buffer.from(tag, "base64url");
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      const parsed = replayPayload.safeParse(JSON.parse(Buffer.from(body, "base64url").toString("utf8")));
      return parsed.success ? parsed.data.replay : undefined;
    },
  };
}

const replayPayload = z.object({ replay: replayStateSchema });
