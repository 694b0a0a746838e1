// A provider request's bytes, each history element encoded once (docs/performance.md, fix 34). A long
// conversation's request is hundreds of KB sent twice a turn, and all of it but the newest messages was sent before:
// building it with one JSON.stringify cost ~2 ms a call at turn 200 (projection, stringify, and flattening the string
// for encoding). The projections hand out one object per history element for the element's lifetime (`once`), so its
// UTF-8 is kept beside it and a request is the join of those bytes. The result is byte for byte JSON.stringify's:
// keys in the body's own order, elements in the list's.

const encoded = new WeakMap<object, Uint8Array>();
const utf8 = new TextEncoder();

/**
 * The value made for `key` the first time, the same object every time after. History elements never change once
 * projected (the canonical history is append-only), which is what makes their encoding reusable.
 */
export function once<K extends object, V>(cache: WeakMap<K, V>, key: K, make: (key: K) => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = make(key);
    cache.set(key, value);
  }
  return value;
}

/** The UTF-8 of JSON.stringify(body), the elements of `body[list]` encoded once per element object. */
export function encodeBody<T extends object>(body: T, list: keyof T & string): Uint8Array {
  const parts: Uint8Array[] = [];
  let prefix = "{";
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue; // as JSON.stringify leaves such keys out
    parts.push(utf8.encode(`${prefix}${JSON.stringify(key)}:`));
    prefix = ",";
    if (key === list) pushList(parts, value as readonly object[]);
    else parts.push(bytesOf(value));
  }
  parts.push(CLOSE_OBJECT);
  return join(parts);
}

const OPEN_LIST = utf8.encode("[");
const CLOSE_LIST = utf8.encode("]");
const CLOSE_OBJECT = utf8.encode("}");
const COMMA = utf8.encode(",");

function pushList(parts: Uint8Array[], elements: readonly object[]): void {
  parts.push(OPEN_LIST);
  elements.forEach((element, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(bytesOf(element));
  });
  parts.push(CLOSE_LIST);
}

/** Objects are encoded once (a mode's tool list, a history element); other values every time. */
function bytesOf(value: unknown): Uint8Array {
  return typeof value === "object" && value !== null ? once(encoded, value, encodeJson) : encodeJson(value);
}

function encodeJson(value: unknown): Uint8Array {
  return utf8.encode(JSON.stringify(value));
}

function join(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.byteLength;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
