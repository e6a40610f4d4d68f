/**
 * The keys of an in-process store in listing order (UTF-16 code units, as `Array.prototype.sort`
 * orders strings), kept sorted as keys come and go, so listing a prefix costs a binary search
 * plus the keys listed — not a scan and sort of every key in the store. A LangGraph thread's
 * `getTuple()` lists its own prefix at every superstep; with a scan, that grew with the number
 * of threads the store held.
 */
export interface SortedKeys {
  /** Records a key (a no-op when it is there). */
  add(key: string): void;
  /** Forgets a key (a no-op when it is not there). */
  remove(key: string): void;
  /** The keys that start with `prefix`, in order: a copy, so the store may change while a caller walks it. */
  withPrefix(prefix: string): string[];
}

/** Keys per chunk before it splits in two (see {@link sortedKeys}). */
const CHUNK_KEYS = 512;

/** Index of the first of `keys` (sorted) that is not below `x`. */
function lowerBound(keys: readonly string[], x: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Sorted keys in chunks of at most `chunkKeys` (each chunk sorted, every key of a chunk below
 * every key of the next, no chunk empty): a key that does not sort last (a new thread's keys
 * land between older threads' — `t-10` before `t-2`) moves one chunk's keys, not the whole
 * store's. With one flat array, a put into a store of 200,000 keys cost ~30 µs of memmove.
 * `chunkKeys` is for tests (small chunks split and empty often).
 */
export function sortedKeys(chunkKeys = CHUNK_KEYS): SortedKeys {
  const chunks: string[][] = [];
  /** Index of the chunk where `key` is or would go: the first whose last key is not below it, else the last chunk. */
  const chunkOf = (key: string): number => {
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = chunks[mid]!;
      if (chunk[chunk.length - 1]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  /** Puts `key` in its place now (a no-op when it is there). */
  const insert = (key: string): void => {
    const last = chunks[chunks.length - 1];
    // New keys usually sort last (a run's next history file): check the end first.
    if (last === undefined || last[last.length - 1]! < key) {
      if (last !== undefined && last.length < chunkKeys) last.push(key);
      else chunks.push([key]);
      return;
    }
    const c = chunkOf(key);
    const chunk = chunks[c]!;
    const at = lowerBound(chunk, key);
    if (chunk[at] === key) return;
    chunk.splice(at, 0, key);
    if (chunk.length > chunkKeys) chunks.splice(c + 1, 0, chunk.splice(chunk.length >>> 1));
  };
  /**
   * Keys added since the order was last needed, not placed yet: a put only appends here, and
   * the next list or remove sorts them and places them at once. A put pays no search among
   * other keys (inside a LangGraph graph each store call runs cache-cold, and a
   * new thread's keys land between older threads'); a thread lists its keys once per invoke.
   */
  let pending: string[] = [];
  const place = (): void => {
    if (pending.length === 0) return;
    const keys = pending;
    pending = [];
    keys.sort();
    for (const key of keys) insert(key);
  };
  return {
    add(key) {
      pending.push(key);
    },
    remove(key) {
      place();
      if (chunks.length === 0) return;
      const c = chunkOf(key);
      const chunk = chunks[c]!;
      const at = lowerBound(chunk, key);
      if (chunk[at] !== key) return;
      chunk.splice(at, 1);
      if (chunk.length === 0) chunks.splice(c, 1);
    },
    withPrefix(prefix) {
      place();
      const out: string[] = [];
      if (chunks.length === 0) return out;
      let c = chunkOf(prefix);
      for (let i = lowerBound(chunks[c]!, prefix); c < chunks.length; c++, i = 0) {
        const chunk = chunks[c]!;
        for (; i < chunk.length; i++) {
          const key = chunk[i]!;
          if (!key.startsWith(prefix)) return out;
          out.push(key);
        }
      }
      return out;
    },
  };
}
