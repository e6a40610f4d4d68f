import { JsonPlusSerializer, type SerializerProtocol } from '@langchain/langgraph-checkpoint';

/**
 * The serializer's output for one value: its `[type, bytes]`, or the JSON text of a primitive
 * the serializer was not called for (see {@link writesPrimitivesAsJson}), stored as type `json`.
 */
export type Dumped = readonly [string, Uint8Array] | string;

/** Values whose output {@link writesPrimitivesAsJson} compares: escapes, a lone surrogate, the numbers JSON prints oddly. */
const PROBES: readonly unknown[] = ['', 'é "q" \\ \n \u0000 \u2028 \uD800 \u{1F600}', 0, -0, 42, -1.5e-7, 1e21, Number.NaN, Number.POSITIVE_INFINITY, true, false, null];

const exactUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Whether `serde` writes a string, number, boolean or null exactly as `JSON.stringify` does,
 * as type `json` — so the saver may write that text itself instead of calling it (a call is
 * an async function, a new `TextEncoder`, a buffer, and a decode back to text; a graph's
 * routing channels, counters and flags are such values). True only for LangGraph's own
 * `JsonPlusSerializer`, its exact class with no method replaced (its replacer returns such
 * values as they are), and only when its real output for the probe values agrees: a version
 * that writes them otherwise keeps being called.
 */
export async function writesPrimitivesAsJson(serde: SerializerProtocol): Promise<boolean> {
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

/** The JSON text of a string, number, boolean or null; undefined for anything else (the serializer decides). */
export function primitiveJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(value);
    case 'object':
      return value === null ? 'null' : undefined;
    default:
      return undefined;
  }
}

/**
 * The serializer's output for each of `values`, in order: with `primitives`, a primitive's
 * JSON text without a call (from index `from` on: the values before it always go to the
 * serializer); the rest serialized at once under one await, and no await at all when nothing
 * is left to serialize (each await is a microtask, and LangGraph's AsyncLocalStorage makes
 * those cost).
 */
export function dumpAll(serde: SerializerProtocol, values: readonly unknown[], primitives: boolean, from = 0): Dumped[] | Promise<Dumped[]> {
  const out: Dumped[] = [];
  const pending: Promise<[string, Uint8Array]>[] = [];
  const at: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    const text = primitives && i >= from ? primitiveJson(value) : undefined;
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
