import type { SaverState } from './saver-state.js';

/*
 * Reading a checkpoint calls the serializer once per stored value (the checkpoint, each
 * channel, each pending write, the metadata). `JsonPlusSerializer.loadsTyped` parses the JSON
 * and then rebuilds it through an async reviver: a promise for every array item and every
 * object member, so a small checkpoint's read made more promises in the serializer than in
 * the store, each one costly under LangGraph's AsyncLocalStorage hooks. The reviver changes
 * only objects that carry an `lc` member (its records for `undefined`, Map, Set, Date's
 * classes, `DeltaSnapshot`, LangChain objects) and a `__proto__` member (which its assignment
 * would turn into a prototype); any other parsed value comes out equal to `JSON.parse`'s.
 * So where the saver already writes plain JSON itself (`writesPlainAsJson`: LangGraph's own
 * serializer, unchanged), it reads such a value with `JSON.parse` alone, and hands every other
 * value to the serializer as before.
 */

/** Answer of {@link loadPlain} when the value must go through the serializer. */
export const USE_SERDE = Symbol('use the serializer');

/** Nesting past this is left to the serializer (the walk below recurses). */
const MAX_DEPTH = 64;

/** Whether the reviver would return `value` as `JSON.parse` made it: no object with an `lc` or `__proto__` member, not too deep. */
function parsedAsRevived(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!parsedAsRevived(item, depth + 1)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  if (Object.hasOwn(record, 'lc') || Object.hasOwn(record, '__proto__')) return false;
  for (const key in record) if (!parsedAsRevived(record[key], depth + 1)) return false;
  return true;
}

/**
 * What `serde.loadsTyped(type, input)` resolves to, without calling it, for a `json` value
 * given as text that the serializer would return as parsed (see above); {@link USE_SERDE}
 * otherwise (another type, bytes, a serializer of the caller's, a parse error: the serializer
 * reports it as before). `state.plainAsJson` must be decided first ({@link plainDecided}).
 */
export function loadPlain(state: SaverState, type: string, input: Uint8Array | string): unknown {
  if (state.plainAsJson !== true || type !== 'json' || typeof input !== 'string') return USE_SERDE;
  let value: unknown;
  try {
    value = JSON.parse(input);
  } catch {
    return USE_SERDE;
  }
  return parsedAsRevived(value, 0) ? value : USE_SERDE;
}

/** The serializer's answer for one stored value: {@link loadPlain}'s when it has one, else `serde.loadsTyped`'s. */
export async function loadValue(state: SaverState, type: string, input: Uint8Array | string): Promise<unknown> {
  const plain = loadPlain(state, type, input);
  return plain === USE_SERDE ? state.saver.serde.loadsTyped(type, input) : plain;
}

/** Whether the saver's serializer is LangGraph's own, decided once (a saver that only reads decides at its first read). */
export function plainDecided(state: SaverState): boolean {
  return state.plainAsJson !== undefined;
}
