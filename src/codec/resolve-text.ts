import { canonicalJson, parseJson } from './canonical-json.js';
import { type JsonObject, type JsonValue } from '../contract/json.js';
import { PART_MARKER, PARTS_MARKER, partRefsOf } from './parts.js';
import { sha256Hex, sha256Incremental } from './sha256.js';
import { utf8Decode } from './utf8.js';

/**
 * Reading a split snapshot back verified from its texts. The document's
 * checksum covers its canonical text reassembled: the main document's text with each part's
 * text in place of its reference. That text is hashed as it streams past — the main text's
 * spans, then each part's stored bytes once its own SHA-256 matched — and each part is parsed
 * straight into the value that replaces its reference, its bytes let go at once. Nothing is
 * serialized again to be checked (that cost a whole copy of the document's text, and its
 * flattening another) and no more than a few parts' bytes are held at a time.
 *
 * When anything is not as savepoint writes it — a part whose bytes do not hash to its
 * reference, a main document not in canonical form, a missing part, a checksum that does not
 * match — this answers `undefined` and the caller resolves the document the general way,
 * which finds and names the problem.
 */

/** A part reference in a text: where it is and what it names. */
interface TextRef {
  readonly start: number;
  readonly end: number;
  /** Its canonical text (a key to find its value again in the parsed document). */
  readonly text: string;
  readonly chunked: boolean;
  readonly parts: readonly { readonly key: string; readonly sha256: string; readonly bytes: number }[];
}

/** Where a value that starts at `at` ends (a string, or an object or array of small values: what a reference holds); -1 if not JSON. */
function valueEnd(text: string, at: number): number {
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      if (i >= text.length) return -1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
    if (depth === 0) return i + 1;
  }
  return -1;
}

const SINGLE_OPEN = `{"${PART_MARKER}":`;
const CHUNKS_OPEN = `{"${PARTS_MARKER}":`;
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The part references of a canonical text, in text order. In JSON text `{"$savepoint_part`
 * can only open an object whose first key is that (inside a string the `"` would be escaped);
 * it is a reference when that key is its only one. Undefined when one cannot be read.
 */
function refsOf(text: string): TextRef[] | undefined {
  const out: TextRef[] = [];
  for (let at = text.indexOf(SINGLE_OPEN.slice(0, -2)); at >= 0; at = text.indexOf(SINGLE_OPEN.slice(0, -2), at + 1)) {
    const chunked = text.startsWith(CHUNKS_OPEN, at);
    if (!chunked && !text.startsWith(SINGLE_OPEN, at)) continue;
    const from = at + (chunked ? CHUNKS_OPEN : SINGLE_OPEN).length;
    const end = valueEnd(text, from);
    if (end < 0) return undefined;
    if (text.charCodeAt(end) !== 0x7d) continue; // more members: not a reference
    const refText = text.slice(at, end + 1);
    let ref: JsonValue;
    try {
      ref = parseJson(refText, 'part reference');
    } catch {
      return undefined;
    }
    const found = isObject(ref) ? partRefsOf(ref) : undefined;
    if (!found) continue; // a marker holding something else refers to no part: data
    const parts = found.refs.map((r) => ({ key: r.key, sha256: r.sha256, bytes: r.bytes }));
    out.push({ start: at, end: end + 1, text: refText, chunked: found.chunked, parts });
    at = end;
  }
  return out;
}

/** Parts loaded ahead, and their declared stored bytes at most (one part over it still loads, alone). */
const LOADS_AHEAD = 8;
const BYTES_AHEAD = 16 * 1024 * 1024;

/** Signals that the fast path cannot vouch for the document: the caller resolves it the general way. */
const GIVE_UP = Symbol('give up');

/**
 * Resolves the part references of the main document `text` (canonical JSON, as stored; `main`
 * is its parse, changed in place only once everything checked out) whose integrity checksum is `checksum`, verifying the checksum over the reassembled text as it goes
 * (see the module's comment). `load` returns a part's stored bytes. Returns the reassembled
 * document, or `undefined` when the caller must resolve it the general way.
 */
export async function resolvePartsOfText(
  text: string,
  main: JsonValue,
  checksum: string,
  load: (key: string) => Promise<Uint8Array | undefined>,
): Promise<JsonValue | undefined> {
  const hash = sha256Incremental();
  if (!hash || !/^[0-9a-f]{64}$/.test(checksum)) return undefined;
  // The checksum member of the root's integrity (never moved to a part), left out of what is hashed.
  const needle = `"checksum":"${checksum}"`;
  let skipFrom = text.indexOf(needle);
  let skipTo = skipFrom + needle.length;
  if (skipFrom < 0) return undefined;
  if (text[skipTo] === ',') skipTo++;
  else if (text[skipFrom - 1] === ',') skipFrom--;
  else return undefined;
  const refs = refsOf(text);
  if (!refs) return undefined;

  // The main document's parts in order, loaded a few ahead of their use.
  const queue = refs.flatMap((r) => r.parts);
  const loads: (Promise<Uint8Array | undefined> | undefined)[] = [];
  let next = 0;
  let used = 0;
  const take = (): Promise<Uint8Array | undefined> => {
    let bytes = 0;
    for (let k = used; k < next; k++) bytes += queue[k]!.bytes;
    while (next < queue.length && (next === used || (next - used < LOADS_AHEAD && bytes + queue[next]!.bytes <= BYTES_AHEAD))) {
      bytes += queue[next]!.bytes;
      loads[next] = load(queue[next]!.key);
      next++;
    }
    const p = loads[used]!;
    loads[used++] = undefined;
    return p;
  };

  try {
    const values = new Map<string, JsonValue[]>();
    let pos = 0;
    for (const ref of refs) {
      hashMain(pos, ref.start);
      remember(values, ref.text, await expand(ref, hash, take, load));
      pos = ref.end;
    }
    hashMain(pos, text.length);
    if (hash.hex() !== checksum) return undefined;
    return substitute(main, values);
  } catch (err) {
    if (err === GIVE_UP) return undefined;
    throw err;
  } finally {
    // Parts loaded ahead and never used: their promises must not reject unhandled.
    for (const p of loads) p?.catch(() => undefined);
  }

  function hashMain(from: number, to: number): void {
    if (from >= to) return;
    if (skipFrom >= to || skipTo <= from) hash!.update(text.slice(from, to));
    else {
      if (from < skipFrom) hash!.update(text.slice(from, skipFrom));
      if (skipTo < to) hash!.update(text.slice(skipTo, to));
    }
  }
}

type Hash = NonNullable<ReturnType<typeof sha256Incremental>>;

function remember(values: Map<string, JsonValue[]>, key: string, value: JsonValue): void {
  const list = values.get(key);
  if (list) list.push(value);
  else values.set(key, [value]);
}

/** A reference's value, its parts checked and hashed into `hash` as the canonical text in its place. */
async function expand(
  ref: TextRef,
  hash: Hash,
  take: () => Promise<Uint8Array | undefined>,
  load: (key: string) => Promise<Uint8Array | undefined>,
): Promise<JsonValue> {
  if (!ref.chunked) return partValue(ref.parts[0]!, await take(), hash, load, false);
  hash.update('[');
  const items: JsonValue[] = [];
  let first = true;
  for (const part of ref.parts) {
    const stored = await take();
    const empty = stored !== undefined && stored.length === 2 && stored[0] === 0x5b && stored[1] === 0x5d;
    if (!empty && !first) hash.update(',');
    const chunk = partValue(part, stored, hash, load, true);
    const value = chunk instanceof Promise ? await chunk : chunk;
    if (!Array.isArray(value)) throw GIVE_UP; // savepoint writes each chunk as an array
    for (const item of value) items.push(item);
    if (!empty) first = false;
  }
  hash.update(']');
  return items;
}

/**
 * The value of one part whose stored bytes are `stored`: checked against its reference's
 * SHA-256, hashed into `hash` (`inner`: without its outer brackets, a chunk of an array), and
 * parsed; references inside it are resolved the same way, one after the other.
 */
async function partValue(
  part: TextRef['parts'][number],
  stored: Uint8Array | undefined,
  hash: Hash,
  load: (key: string) => Promise<Uint8Array | undefined>,
  inner: boolean,
): Promise<JsonValue> {
  if (stored === undefined || stored.length !== part.bytes || (await sha256Hex(stored)) !== part.sha256) throw GIVE_UP;
  const text = utf8Decode(stored, part.key);
  const refs = refsOf(text);
  if (!refs) throw GIVE_UP;
  if (inner && (text.charCodeAt(0) !== 0x5b || text.charCodeAt(text.length - 1) !== 0x5d)) throw GIVE_UP;
  const from = inner ? 1 : 0;
  const to = inner ? text.length - 1 : text.length;
  if (refs.length === 0) {
    hash.update(inner ? stored.subarray(1, stored.length - 1) : stored); // brackets are one byte each
    return parseJson(text, part.key);
  }
  const values = new Map<string, JsonValue[]>();
  let pos = from;
  for (const ref of refs) {
    if (ref.start < from || ref.end > to) throw GIVE_UP;
    hash.update(text.slice(pos, ref.start));
    let k = 0;
    const next = (): Promise<Uint8Array | undefined> => load(ref.parts[k++]!.key);
    remember(values, ref.text, await expand(ref, hash, next, load));
    pos = ref.end;
  }
  hash.update(text.slice(pos, to));
  return substitute(parseJson(text, part.key), values);
}

/** `value` with each reference replaced by the value resolved for its text (in the order met, for a reference that occurs twice). */
function substitute(value: JsonValue, values: Map<string, JsonValue[]>): JsonValue {
  if (values.size === 0) return value;
  const root: { value: JsonValue } = { value };
  const stack: [Record<string | number, JsonValue>, string | number][] = [[root, 'value']];
  const found: [Record<string | number, JsonValue>, string | number, string][] = [];
  while (stack.length > 0) {
    const [holder, key] = stack.pop()!;
    const v = holder[key]!;
    if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push([v as unknown as Record<number, JsonValue>, i]);
    else if (isObject(v)) {
      const keys = Object.keys(v);
      if (partRefsOf(v)) found.push([holder, key, canonicalJson(v)]);
      else for (let i = keys.length - 1; i >= 0; i--) stack.push([v, keys[i]!]);
    }
  }
  for (const [holder, key, text] of found) {
    const list = values.get(text);
    if (!list || list.length === 0) throw GIVE_UP;
    holder[key] = list.shift()!;
  }
  for (const list of values.values()) if (list.length > 0) throw GIVE_UP;
  return root.value;
}
