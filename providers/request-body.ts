// A provider request's bytes, built from the last request's (docs/performance.md, fixes 34 and 36). A long
// conversation's request is hundreds of KB sent twice a turn, and all of it but the newest messages was sent before:
// building it with one JSON.stringify cost ~2 ms a call at turn 200 (projection, stringify, and flattening the string
// for encoding). The projections hand out one object per history element for the element's lifetime (`once`), so
// the elements a request shares with the previous one are known by identity and their bytes are copied from it. The
// result is byte for byte JSON.stringify's: keys in the body's own order, elements in the list's.

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

/**
 * The UTF-8 of JSON.stringify(body), in the pieces it is written in. The elements of `body[list]` it shares with the
 * last such list are not encoded again, nor are object values encoded before (a mode's tool list).
 */
export function encodeBody<T extends object>(body: T, list: keyof T & string): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  let text = "{";
  const flush = () => {
    pieces.push(utf8.encode(text));
    text = "";
  };
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue; // as JSON.stringify leaves such keys out
    text += `${text === "{" ? "" : ","}${JSON.stringify(key)}:`;
    if (key === list) {
      text += "[";
      flush();
      pushList(pieces, value as readonly object[]);
      text = "]";
    } else if (typeof value === "object" && value !== null) {
      flush();
      pieces.push(once(encoded, value, encodeJson));
    } else text += JSON.stringify(value);
  }
  text += "}";
  flush();
  return pieces;
}

/** A list's elements as last encoded, their JSON joined by commas in pieces, and where each element's bytes end. */
interface EncodedList {
  elements: readonly object[];
  pieces: readonly Uint8Array[];
  ends: readonly number[];
}

/** Keyed by the list's first two elements: the first may be built afresh for every call (Chat's system message). */
const lists = new WeakMap<object, EncodedList>();

/** Past this many pieces a list is joined into one: a write takes a bounded number, a piece per turn would not. */
const MAX_PIECES = 32;

/**
 * A list's JSON, appended to `out` in pieces. Lists grow at the end from call to call, so the run of elements it
 * shares with the last list encoded from the same start is that list's pieces, and only the other elements are
 * stringified. Kept one per element, the bytes lay scattered over the heap, and gathering 800 of them cost ~0.5 ms
 * a call at turn 200; joined anew for every call, the fresh buffers were faulted in page by page.
 */
function pushList(out: Uint8Array[], elements: readonly object[]): void {
  const previous = lists.get(elements[0]!) ?? (elements.length > 1 ? lists.get(elements[1]!) : undefined);
  const [from, to] = previous ? sharedRun(previous.elements, elements) : [0, 0];
  let pieces: Uint8Array[] = [];
  const ends: number[] = [];
  let length = 0;
  const encode = (i: number) => {
    const bytes = utf8.encode(`${i > 0 ? "," : ""}${JSON.stringify(elements[i])}`);
    pieces.push(bytes);
    length += bytes.byteLength;
    ends.push(length);
  };
  for (let i = 0; i < from; i++) encode(i);
  if (previous && to > from) {
    // From the comma ahead of element `from`, which this list has too.
    const start = from === 0 ? 0 : previous.ends[from - 1]!;
    pieces.push(...slicePieces(previous.pieces, start, previous.ends[to - 1]!));
    for (let j = from; j < to; j++) ends.push(length + previous.ends[j]! - start);
    length = ends[ends.length - 1]!;
  }
  for (let i = to; i < elements.length; i++) encode(i);
  if (pieces.length > MAX_PIECES) pieces = [join(pieces)];
  const entry: EncodedList = { elements, pieces, ends };
  for (const key of elements.slice(0, 2)) lists.set(key, entry);
  out.push(...pieces);
}

/** The elements `[from, to)` that are the same objects at the same places in both lists, from the first or second. */
function sharedRun(before: readonly object[], now: readonly object[]): [number, number] {
  const from = before[0] === now[0] ? 0 : 1;
  let to = from;
  while (to < before.length && to < now.length && before[to] === now[to]) to++;
  return [from, to];
}

/** The bytes `[start, end)` of the pieces' concatenation, as views of them. */
function slicePieces(pieces: readonly Uint8Array[], start: number, end: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let offset = 0;
  for (const piece of pieces) {
    const from = Math.max(start - offset, 0);
    const to = Math.min(end - offset, piece.byteLength);
    if (from < to) out.push(from === 0 && to === piece.byteLength ? piece : piece.subarray(from, to));
    offset += piece.byteLength;
    if (offset >= end) break;
  }
  return out;
}

function encodeJson(value: unknown): Uint8Array {
  return utf8.encode(JSON.stringify(value));
}

function join(pieces: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const piece of pieces) length += piece.byteLength;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const piece of pieces) {
    out.set(piece, offset);
    offset += piece.byteLength;
  }
  return out;
}
