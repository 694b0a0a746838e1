// The wire bytes of a text_delta frame, written directly (issue 17): AgentServerMessage.interaction_update (1) →
// InteractionUpdate.text_delta (1) → TextDeltaUpdate.text (1), three nested length-delimited fields. The generic
// encoder walks the schema for every paced delta (~5 µs each under 200 concurrent streams); this is a fraction of
// that. test/cursor/text-delta-bytes.test.ts checks it against toBinary for any text.

/** Tag of field 1, wire type 2 (length-delimited): the same at every level of this frame. */
const FIELD_1_LEN = 0x0a;

const varintSize = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** The encoded AgentServerMessage carrying `interaction_update { text_delta { text } }`. */
export function encodeTextDelta(text: string): Uint8Array {
  const textBytes = Buffer.byteLength(text, "utf8");
  // proto3 leaves an empty string out: an empty delta is an empty TextDeltaUpdate.
  const delta = textBytes ? 1 + varintSize(textBytes) + textBytes : 0;
  const update = 1 + varintSize(delta) + delta;
  const out = Buffer.allocUnsafe(1 + varintSize(update) + update);
  let at = 0;
  const field = (length: number) => {
    out[at++] = FIELD_1_LEN;
    let n = length;
    while (n >= 0x80) {
      out[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[at++] = n;
  };
  field(update);
  field(delta);
  if (textBytes) {
    field(textBytes);
    out.write(text, at, "utf8");
  }
  return out;
}
