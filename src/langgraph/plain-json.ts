import { JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { quotedKey, sortKeys } from '../codec/canonical-json.js';
import { quoteRecent } from './recent-texts.js';

/**
 * The serializer's output for one value: its `[type, bytes]`, or the JSON text of plain data
 * the serializer was not called for (see {@link writesPlainAsJson}), stored as type `json`.
 */
export type Dumped = readonly [string, Uint8Array] | string;

/** Values whose output {@link writesPlainAsJson} compares: escapes, a lone surrogate, the numbers JSON prints oddly, nesting. */
const PROBES: readonly unknown[] = [
  '',
  'é "q" \\ \n \u0000 \u2028 \uD800 \u{1F600}',
  0,
  -0,
  42,
  -1.5e-7,
  1e21,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  false,
  null,
  [],
  {},
  { b: [1, 'x', null, [true]], a: { '10': 1, '9': -0 }, __proto__: null },
];

const exactUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Whether `serde` writes plain JSON data ({@link plainJson}) exactly as `JSON.stringify`
 * does, as type `json` — so the saver may write that text itself instead of calling it (a
 * call is an async function, a replacer called for every value, a new `TextEncoder`, a
 * buffer, and a decode back to text). True only for LangGraph's own `JsonPlusSerializer`, its
 * exact class with no method replaced (its replacer returns such values as they are), and
 * only when its real output for the probe values agrees: a version that writes them
 * otherwise keeps being called.
 */
export async function writesPlainAsJson(serde: SerializerProtocol): Promise<boolean> {
  if (!(serde instanceof JsonPlusSerializer) || Object.getPrototypeOf(serde) !== JsonPlusSerializer.prototype) return false;
  if (Object.hasOwn(serde, 'dumpsTyped') || Object.hasOwn(serde, '_dumps')) return false;
  try {
    for (const value of PROBES) {
      const [type, bytes] = await serde.dumpsTyped(value);
      if (type !== 'json' || exactUtf8.decode(bytes) !== JSON.stringify(value)) return false;
    }
  } catch {
    return false;
  }
  return true;
}

/** Deeper data is left to the serializer (as is data that refers to itself). */
const MAX_DEPTH = 64;

/**
 * True for plain JSON data: strings, numbers, booleans, null, and arrays and plain objects
 * (prototype `Object.prototype` or null) of such, with no `undefined` inside, no `toJSON`,
 * no LangGraph `Send` and no cycle. `JsonPlusSerializer` writes exactly these as
 * `JSON.stringify` does: its replacer only changes `undefined`, `Send`s and class instances
 * (Map, Set, Date's string is the same, RegExp, Error, Uint8Array, DeltaSnapshot).
 */
function isPlain(value: unknown, stack: object[]): boolean {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return true;
    case 'object':
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (stack.length >= MAX_DEPTH || stack.includes(value)) return false;
  stack.push(value);
  const plain = Array.isArray(value) ? isPlainArray(value, stack) : isPlainObject(value as Record<string, unknown>, stack);
  stack.pop();
  return plain;
}

function isPlainArray(array: unknown[], stack: object[]): boolean {
  if (Object.getPrototypeOf(array) !== Array.prototype) return false;
  for (let i = 0; i < array.length; i++) if (array[i] === undefined || !isPlain(array[i], stack)) return false;
  return true;
}

function isPlainObject(record: Record<string, unknown>, stack: object[]): boolean {
  if (!isPlainShell(record)) return false;
  for (const key of Object.keys(record)) if (!isPlain(record[key], stack)) return false;
  return true;
}

/** The object itself, not its members: prototype `Object.prototype` or null, not a `Send`, no `toJSON`. */
function isPlainShell(record: Record<string, unknown>): boolean {
  const proto: unknown = Object.getPrototypeOf(record);
  if (proto !== Object.prototype && proto !== null) return false;
  return record.lg_name !== 'Send' && typeof record.toJSON !== 'function';
}

/** The JSON text of plain JSON data (see `isPlain`); undefined for anything else (the serializer decides). */
export function plainJson(value: unknown): string | undefined {
  // A string a task wrote is, the next superstep, a channel's value: encoded once (see quoteRecent).
  if (typeof value === 'string') return quoteRecent(value);
  return isPlain(value, []) ? JSON.stringify(value) : undefined;
}

/**
 * `JSON.stringify` of `record` without its member `excluded` when the rest is plain JSON data
 * (see `isPlain`; `record` itself a plain object), else undefined: what
 * `plainJson(recordWithout)` gives, without copying the record first (a rest copy,
 * `{ [excluded]: _, ...rest }`, is a runtime call, and the saver's put leaves a
 * checkpoint's `channel_values` out this way, cache-cold, once a superstep).
 */
export function plainJsonWithout(record: object, excluded: string): string | undefined {
  const r = record as Record<string, unknown>;
  if (!isPlainShell(r)) return undefined;
  const stack: object[] = [record];
  let text = '{';
  for (const key of Object.keys(r)) {
    if (key === excluded) continue;
    const value = r[key];
    if (!isPlain(value, stack)) return undefined;
    text += `${text.length > 1 ? ',' : ''}${quotedKey(key)}:${typeof value === 'string' ? quoteRecent(value) : JSON.stringify(value)}`;
  }
  return `${text}}`;
}

/**
 * Canonical JSON of plain data (see `isPlain`, which `value` passed: {@link plainJson} gave
 * its text) without parsing that text back: what `canonicalJson(JSON.parse(plainJson(value)))`
 * is — keys in code-unit order, numbers and strings as `JSON.stringify` writes them (a number
 * JSON cannot hold as `null`, as the parsed text holds it). Undefined for a `__proto__` key,
 * which the parsing path refuses with its own error.
 */
export function plainCanonicalJson(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  let text: string;
  if (Array.isArray(value)) {
    text = '[';
    for (let i = 0; i < value.length; i++) {
      const item = plainCanonicalJson(value[i]);
      if (item === undefined) return undefined;
      text += i > 0 ? `,${item}` : item;
    }
    return `${text}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  sortKeys(keys);
  text = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const item = key === '__proto__' ? undefined : plainCanonicalJson(record[key]);
    if (item === undefined) return undefined;
    text += `${i > 0 ? ',' : ''}${quotedKey(key)}:${item}`;
  }
  return `${text}}`;
}

/**
 * Canonical JSON of a plain object (see `isPlain`) as {@link plainCanonicalJson} makes it,
 * without its `JSON.stringify` text first: the saver stores a checkpoint's plain metadata
 * canonical only. Undefined for anything else (the serializer decides, as in {@link dumpAll}).
 */
export function plainObjectCanonicalJson(value: unknown): string | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && isPlain(value, []) ? plainCanonicalJson(value) : undefined;
}

/**
 * The serializer's output for each of `values`, in order: with `plain`, plain JSON data as
 * its JSON text without a call; the rest serialized at once under one await, and no await at
 * all when nothing is left to serialize (each await is a microtask, and LangGraph's
 * AsyncLocalStorage makes those cost).
 */
export function dumpAll(serde: SerializerProtocol, values: readonly unknown[], plain: boolean): Dumped[] | Promise<Dumped[]> {
  const out: Dumped[] = [];
  const pending: Promise<[string, Uint8Array]>[] = [];
  const at: number[] = [];
  for (const value of values) {
    const text = plain ? plainJson(value) : undefined;
    if (text !== undefined) out.push(text);
    else {
      at.push(out.length);
      out.push('');
      pending.push(serde.dumpsTyped(value));
    }
  }
  if (pending.length === 0) return out;
  return Promise.all(pending).then((dumped) => {
    for (let i = 0; i < dumped.length; i++) out[at[i]!] = dumped[i]!;
    return out;
  });
}
