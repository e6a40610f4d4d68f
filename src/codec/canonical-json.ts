import { CheckpointError } from '../contract/errors.js';
import { type JsonValue } from '../contract/json.js';

/** Keys that would let a decoded document reach `Object.prototype` through a later merge. */
const FORBIDDEN_KEYS = new Set(['__proto__']);

function pathOf(path: readonly (string | number)[]): string {
  let out = '$';
  for (const part of path) {
    out += typeof part === 'number' ? `[${part}]` : /^[A-Za-z_$][\w$]*$/.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`;
  }
  return out;
}

function invalid(path: readonly (string | number)[], what: string): CheckpointError {
  const at = pathOf(path);
  return new CheckpointError('checkpoint_schema_invalid', `${what} at ${at} cannot be stored as JSON`, { details: { path: at } });
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Thrown by the fast path; the slow path then finds the offending value's path. */
const NOT_JSON = Symbol('not JSON');

/**
 * Strings at least this long that need no escape are placed in the text by reference (a
 * rope holding the caller's own string) instead of being copied by `JSON.stringify` — in
 * pieces, then again when the pieces are flattened — and the encoder writes them straight into
 * the stored bytes (peak memory of large checkpoints). Strings are immutable, so
 * nothing the caller does later can change the text.
 */
export const BIG_STRING = 64 * 1024;
/** What makes `JSON.stringify` change a string: quote, backslash, control characters; and any surrogate (it escapes the lone ones), to be safe. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
export const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** Appends the canonical JSON of `v` to `out`, piece by piece; a big string that needs no escape is one piece of its own, by reference. */
function walk(v: unknown, stack: Set<object>, out: string[]): void {
  switch (typeof v) {
    case 'string':
      if (v.length >= BIG_STRING && !NEEDS_ESCAPE.test(v)) out.push('"', v, '"');
      else out.push(JSON.stringify(v));
      return;
    case 'number':
      if (!Number.isFinite(v)) throw NOT_JSON;
      out.push(JSON.stringify(v));
      return;
    case 'boolean':
      out.push(v ? 'true' : 'false');
      return;
    case 'object': {
      if (v === null) {
        out.push('null');
        return;
      }
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
        sawToJson = true;
        walk((v as { toJSON: () => unknown }).toJSON(), stack, out);
        return;
      }
      if (stack.has(v)) throw NOT_JSON;
      stack.add(v);
      if (Array.isArray(v)) {
        out.push('[');
        for (let i = 0; i < v.length; i++) {
          if (i > 0) out.push(',');
          walk(v[i], stack, out);
        }
        out.push(']');
      } else {
        if (!isPlainObject(v)) throw NOT_JSON;
        const record = v as Record<string, unknown>;
        const keys = Object.keys(record).sort();
        out.push('{');
        let first = true;
        for (const key of keys) {
          const item = record[key];
          if (item === undefined) continue;
          if (FORBIDDEN_KEYS.has(key)) throw NOT_JSON;
          out.push(`${first ? '' : ','}${JSON.stringify(key)}:`);
          walk(item, stack, out);
          first = false;
        }
        out.push('}');
      }
      stack.delete(v);
      return;
    }
    default:
      throw NOT_JSON;
  }
}

/** The walk's text, flat (one copy): the JavaScript path of {@link canonicalJson}. */
function fast(v: unknown, stack: Set<object>): string {
  const out: string[] = [];
  walk(v, stack, out);
  return out.join('');
}

/**
 * Serializes `value` as canonical JSON: object keys sorted by UTF-16 code units (as
 * RFC 8785 does), no insignificant whitespace, numbers as ECMAScript prints them.
 * The same data always yields the same string, so checksums do not depend on key order.
 *
 * Rejects, with `checkpoint_schema_invalid` and the JSON path of the bad value, what
 * JSON cannot carry faithfully: `undefined` in arrays or at the top, functions,
 * symbols, BigInt, NaN, ±Infinity, cycles, class instances other than those with
 * `toJSON` (Date), and `__proto__` keys. An object property whose value is `undefined`
 * is omitted, as `JSON.stringify` does, because that is how optional fields look in TypeScript.
 */
export function canonicalJson(value: unknown): string {
  // No cache keyed on object identity here: a caller may mutate an object between two
  // calls, and a remembered text would then be stale.
  // A header member (an id, a time, a sequence) needs no replacer.
  if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) return JSON.stringify(value);
  // An empty list (a snapshot's source_details, most of the time) needs no replacer either.
  if (Array.isArray(value) && value.length === 0 && !hasToJson(value)) return '[]';
  try {
    return native(value);
  } catch (err) {
    if (err !== NOT_NATIVE && err !== NOT_JSON) throw err;
  }
  return canonicalJsonByWalk(value);
}

/**
 * Set while serializing when a value's `toJSON` ran (a `Date` becomes its ISO string): the
 * text then holds something other than what the caller had. {@link canonicalJsonOf} reports it.
 */
let sawToJson = false;

const hasToJson = (v: unknown): boolean => typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function';

/**
 * Canonical JSON of `value` as {@link canonicalJson} makes it, and the path of the first value
 * JSON could only keep converted — an object with `toJSON`, such as a `Date`, stored as what
 * `toJSON` returns — so a caller can refuse it or warn instead of changing it silently.
 * (Everything else JSON cannot keep — `Map`, `Set`, `NaN`, `undefined` in an array, `BigInt`,
 * functions, class instances, cycles — is refused by `canonicalJson` itself; an object member
 * that is `undefined` is left out, which reads back the same.)
 */
export function canonicalJsonOf(value: unknown): {
  readonly text: string;
  readonly convertedAt?: string;
  readonly pieces?: readonly string[];
} {
  sawToJson = false;
  const { text, pieces } = canonicalTextOrPieces(value);
  const found = sawToJson ? firstToJsonPath(value, []) : undefined;
  // One shape for every call (absent members undefined): this runs once per checkpoint.
  return { text, convertedAt: found, pieces };
}

/**
 * `canonicalJson(value)`, except that a value holding big strings (see {@link BIG_STRING}) comes
 * as the pieces of its text too, those strings among them by reference, and its `text` is a rope
 * of those pieces that is flattened only if something reads it whole. An encoder that writes
 * the pieces one after the other (`sealMembers`) never needs the whole text as a flat string.
 * @internal
 */
export function canonicalTextOrPieces(value: unknown, budget = LARGE_VALUES): { text: string; pieces?: readonly string[] } {
  if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) || value === undefined)
    return { text: canonicalJson(value) };
  try {
    return { text: native(value, budget) };
  } catch (err) {
    if (err !== NOT_NATIVE && err !== NOT_JSON && err !== LARGE) throw err;
    if (err === LARGE) {
      const pieces = inPieces(value, budget);
      if (pieces) return { text: ropeOf(pieces), pieces };
    }
  }
  const out: string[] = [];
  try {
    walk(value, new Set(), out);
  } catch (err) {
    if (err !== NOT_JSON) throw err;
    return { text: canonicalJsonReportingPath(value) };
  }
  if (!out.some((p) => p.length >= BIG_STRING)) return { text: out.join('') };
  return { text: ropeOf(out), pieces: out };
}

/** The pieces as one string that is flattened only if something reads it whole. */
function ropeOf(pieces: readonly string[]): string {
  let rope = '';
  for (const p of pieces) rope += p;
  return rope;
}

/**
 * Values the engine's `JSON.stringify` serializes in one call of {@link canonicalTextOrPieces}
 * before the value counts as large. The engine returns a rope of small strings; the first read
 * of it copies it whole into one flat string while the rope still lives: a second copy of a
 * large payload's text at the peak (many small values). A large value is
 * serialized instead in pieces of at most this many values, each flattened on its own.
 */
const LARGE_VALUES = 1 << 17;
/** Thrown by the replacer when a call serialized more values than its budget. */
const LARGE = Symbol('large');
/** Replacer calls left before {@link LARGE} (Infinity: no budget, as `canonicalJson` wants one string). */
let valuesLeft = Number.POSITIVE_INFINITY;
/** Items of an array serialized in one call of the engine, when the array is large. */
const ITEMS_AT_ONCE = 1024;
/** Pieces shorter than this are joined to their neighbours. */
const SMALL_PIECE = 64 * 1024;

/**
 * The canonical text of a large `value` as flat pieces: the engine serializes what fits in the
 * budget in one call; an object or array that does not is written member by member (an array
 * `ITEMS_AT_ONCE` items at a time), each member the same way. The same text `native` makes,
 * and the same checks (the replacer's); undefined for anything the walk must decide (a value
 * the engine cannot serialize exactly like the walk, or one JSON cannot carry: the walk finds
 * where).
 */
function inPieces(value: unknown, budget: number): string[] | undefined {
  const w: PieceWriter = { pieces: [], small: '', stack: new Set(), budget };
  try {
    writePieces(w, value);
  } catch (err) {
    if (err === NOT_JSON || err === NOT_NATIVE) return undefined;
    throw err;
  }
  if (w.small.length > 0) w.pieces.push(flat(w.small));
  return w.pieces;
}

/** The text {@link inPieces} has written so far. */
interface PieceWriter {
  /** Flat pieces, in order. */
  readonly pieces: string[];
  /** Short texts not yet a piece: joined until they reach {@link SMALL_PIECE}. */
  small: string;
  /** Objects being written (a cycle is not JSON). */
  readonly stack: Set<object>;
  /** Values the engine may serialize in one call. */
  readonly budget: number;
}

function pushPiece(w: PieceWriter, text: string): void {
  if (text.length < SMALL_PIECE) {
    w.small += text;
    if (w.small.length < SMALL_PIECE) return;
    w.pieces.push(flat(w.small));
    w.small = '';
    return;
  }
  if (w.small.length > 0) w.pieces.push(flat(w.small));
  w.small = '';
  w.pieces.push(flat(text));
}

/** `native(v, budget)`, or undefined when `v` holds more values than the budget. */
function nativeWithin(v: unknown, budget: number): string | undefined {
  try {
    return native(v, budget);
  } catch (err) {
    if (err !== LARGE) throw err;
    return undefined;
  }
}

/** Writes `v`: by the engine in one call when it is within the budget, else member by member. */
function writePieces(w: PieceWriter, v: unknown): void {
  const text = nativeWithin(v, w.budget);
  if (text !== undefined) {
    pushPiece(w, text);
    return;
  }
  if (hasToJson(v)) {
    sawToJson = true;
    writePieces(w, (v as { toJSON: () => unknown }).toJSON());
    return;
  }
  if (typeof v !== 'object' || v === null || w.stack.has(v)) throw NOT_JSON;
  w.stack.add(v);
  if (Array.isArray(v)) writeArrayPieces(w, v);
  else writeObjectPieces(w, v);
  w.stack.delete(v);
}

function writeArrayPieces(w: PieceWriter, v: readonly unknown[]): void {
  pushPiece(w, '[');
  for (let i = 0; i < v.length; i += ITEMS_AT_ONCE) {
    if (i > 0) pushPiece(w, ',');
    const slice = v.slice(i, i + ITEMS_AT_ONCE);
    const chunk = nativeWithin(slice, w.budget);
    if (chunk !== undefined) pushPiece(w, chunk.slice(1, -1));
    else
      for (let k = 0; k < slice.length; k++) {
        if (k > 0) pushPiece(w, ',');
        if (slice[k] === undefined || !(k in slice)) throw NOT_JSON;
        writePieces(w, slice[k]);
      }
  }
  pushPiece(w, ']');
}

function writeObjectPieces(w: PieceWriter, v: object): void {
  if (!isPlainObject(v)) throw NOT_JSON;
  const record = v as Record<string, unknown>;
  const keys = Object.keys(record);
  sortKeys(keys);
  pushPiece(w, '{');
  let first = true;
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (FORBIDDEN_KEYS.has(key)) throw NOT_JSON;
    pushPiece(w, `${first ? '' : ','}${JSON.stringify(key)}:`);
    writePieces(w, item);
    first = false;
  }
  pushPiece(w, '}');
}

/** Where the first object with `toJSON` is, depth first in key order; undefined if none. */
function firstToJsonPath(v: unknown, path: (string | number)[]): string | undefined {
  if (hasToJson(v)) return pathOf(path);
  if (typeof v !== 'object' || v === null) return undefined;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      const found = firstToJsonPath(v[i], path);
      path.pop();
      if (found) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(v).sort()) {
    path.push(key);
    const found = firstToJsonPath((v as Record<string, unknown>)[key], path);
    path.pop();
    if (found) return found;
  }
  return undefined;
}

/** Thrown by the native path when it cannot decide: the walk in `fast` then does. */
const NOT_NATIVE = Symbol('not native');
/** A canonical array index: V8 lists such keys first, in numeric order, whatever the insertion order. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/**
 * The common case through the engine's own `JSON.stringify`, several times faster than a walk
 * in JavaScript (200 KB: 0.4 ms against 1.6 ms) and with a flat result: a replacer checks
 * every value as `fast` does and hands over plain objects with their keys in sorted order
 * (the object itself when they already are, else a sorted copy). Whatever it cannot decide
 * exactly like `fast` — an object with array-index keys (the engine orders those
 * numerically), a cycle, a getter or `toJSON` that throws — goes to `fast`, so the result
 * and the errors are the same on both paths.
 */
function native(value: unknown, budget = Number.POSITIVE_INFINITY): string {
  if (value === undefined) throw NOT_JSON;
  if (hasToJson(value)) sawToJson = true;
  valuesLeft = budget; // every call sets its own
  let text: string | undefined;
  try {
    text = JSON.stringify(value, canonicalReplacer) as string | undefined;
  } catch (err) {
    throw err === NOT_JSON || err === LARGE ? err : NOT_NATIVE;
  }
  // A function or symbol alone: JSON has no text for it.
  if (typeof text !== 'string') throw NOT_JSON;
  return text;
}

function canonicalReplacer(this: unknown, key: string, v: unknown): unknown {
  if (--valuesLeft < 0) throw LARGE;
  switch (typeof v) {
    case 'string':
      // The engine would copy a big string into its pieces, then again to flatten them: the walk keeps a reference.
      if (v.length >= BIG_STRING && !NEEDS_ESCAPE.test(v)) throw NOT_NATIVE;
      return v;
    case 'boolean':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw NOT_JSON;
      return v;
    case 'undefined':
      // An object member that is undefined is left out, as `fast` does; an array element is not JSON.
      if (Array.isArray(this)) throw NOT_JSON;
      return v;
    case 'object': {
      if (v === null) return v;
      if (Array.isArray(v)) {
        if (!sawToJson) for (const item of v as unknown[]) if (hasToJson(item)) sawToJson = true;
        return v;
      }
      if (!isPlainObject(v)) throw NOT_JSON;
      const record = v as Record<string, unknown>;
      const keys = Object.keys(record);
      let sorted = true;
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        // An array index starts with a digit: only those keys pay for the pattern.
        const first = k.charCodeAt(0);
        if (first >= 0x30 && first <= 0x39 && ARRAY_INDEX.test(k)) throw NOT_NATIVE;
        const item = record[k];
        if (k === '__proto__' && item !== undefined) throw NOT_JSON;
        if (typeof item === 'object' && item !== null && typeof (item as { toJSON?: unknown }).toJSON === 'function') sawToJson = true;
        if (i > 0 && keys[i - 1]! > k) sorted = false;
      }
      if (sorted) return v;
      sortKeys(keys);
      const copy: Record<string, unknown> = {};
      for (const k of keys) copy[k] = record[k];
      return copy;
    }
    default:
      throw NOT_JSON;
  }
}

/**
 * `JSON.stringify(key)`, remembered for the few member names documents use (a profile's
 * members, a graph's metadata and channel names): a call of the builtin costs more than a
 * lookup of a string whose hash is known. Cleared when it grows.
 */
export function quotedKey(key: string): string {
  // A long key is not kept alive here (a map's keys can be anything).
  if (key.length > 64) return JSON.stringify(key);
  let quoted = QUOTED_KEYS.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (QUOTED_KEYS.size >= 256) QUOTED_KEYS.clear();
    QUOTED_KEYS.set(key, quoted);
  }
  return quoted;
}
const QUOTED_KEYS = new Map<string, string>();

/** Sorts keys by UTF-16 code units, as `Array.prototype.sort` does, without its allocations for the few keys an object usually has. */
export function sortKeys(keys: string[]): void {
  if (keys.length > 16) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
}

/**
 * The text `fast` builds by appending is a rope of many pieces; V8 flattens such a string
 * in place the first time a number is read from it. Doing it once here makes every later
 * use (comparing texts, joining them into a document, encoding to UTF-8) work on one flat
 * copy: left to those uses, a 200 KB payload was compared piece by piece and copied twice.
 */
function flat(text: string): string {
  Number(text);
  return text;
}

/**
 * @internal The JavaScript walk alone: what `canonicalJson` falls back to when the native path
 * cannot decide or finds a value JSON cannot carry (and the test that the two paths agree).
 */
export function canonicalJsonByWalk(value: unknown): string {
  try {
    return flat(fast(value, new Set()));
  } catch (err) {
    if (err !== NOT_JSON) throw err;
    // Rare: walk again, tracking paths, to say where the bad value is.
    return canonicalJsonReportingPath(value);
  }
}

function canonicalJsonReportingPath(value: unknown): string {
  const parts: string[] = [];
  const stack = new Set<object>();
  const path: (string | number)[] = [];

  const write = (input: unknown): void => {
    let v = input;
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      v = (v as { toJSON: () => unknown }).toJSON();
    }
    switch (typeof v) {
      case 'string':
        parts.push(JSON.stringify(v));
        return;
      case 'boolean':
        parts.push(v ? 'true' : 'false');
        return;
      case 'number':
        if (!Number.isFinite(v)) throw invalid(path, `the number ${String(v)}`);
        parts.push(JSON.stringify(v));
        return;
      case 'bigint':
        throw invalid(path, 'a BigInt');
      case 'function':
        throw invalid(path, 'a function');
      case 'symbol':
        throw invalid(path, 'a symbol');
      case 'undefined':
        throw invalid(path, 'undefined');
      default:
        break;
    }
    if (v === null) {
      parts.push('null');
      return;
    }
    const obj = v as object;
    if (stack.has(obj)) throw invalid(path, 'a cycle');
    stack.add(obj);
    if (Array.isArray(obj)) {
      parts.push('[');
      for (let i = 0; i < obj.length; i++) {
        if (i > 0) parts.push(',');
        path.push(i);
        write(obj[i]);
        path.pop();
      }
      parts.push(']');
    } else {
      if (!isPlainObject(obj)) throw invalid(path, `an instance of ${obj.constructor?.name ?? 'a class'}`);
      const record = obj as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      parts.push('{');
      let first = true;
      for (const key of keys) {
        if (FORBIDDEN_KEYS.has(key)) throw invalid([...path, key], 'the key "__proto__"');
        const item = record[key];
        if (item === undefined) continue;
        if (!first) parts.push(',');
        first = false;
        parts.push(JSON.stringify(key), ':');
        path.push(key);
        write(item);
        path.pop();
      }
      parts.push('}');
    }
    stack.delete(obj);
  };

  write(value);
  return parts.join('');
}

/**
 * Parses JSON text safely: a `__proto__` key anywhere is refused with
 * `checkpoint_schema_invalid` (it is never legitimate in a checkpoint, and a later
 * merge of such an object could pollute `Object.prototype`). `constructor` and
 * `prototype` stay ordinary own data properties, which cannot pollute anything.
 */
export function parseJson(text: string, where = 'document'): JsonValue {
  let result: unknown;
  try {
    // A "__proto__" key can only be spelled literally or through a \u escape; text with
    // neither cannot hold one, and skips the reviver (3-4x faster on large indexes).
    if (!text.includes('__proto__') && !text.includes('\\u')) return JSON.parse(text) as JsonValue;
    result = JSON.parse(text, function reviver(key, val: unknown) {
      if (FORBIDDEN_KEYS.has(key)) {
        throw new CheckpointError('checkpoint_schema_invalid', `${where} contains a forbidden "__proto__" key`, { details: { key } });
      }
      return val;
    });
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError('checkpoint_schema_invalid', `${where} is not valid JSON`, { cause: err });
  }
  return result as JsonValue;
}
