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

export function sortedKeys(): SortedKeys {
  const keys: string[] = [];
  /** Index of the first key >= `x`. */
  const lowerBound = (x: string): number => {
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return {
    add(key) {
      // New keys usually sort last (a run's next history file): check the end first.
      const n = keys.length;
      if (n === 0 || keys[n - 1]! < key) {
        keys.push(key);
        return;
      }
      const at = lowerBound(key);
      if (keys[at] !== key) keys.splice(at, 0, key);
    },
    remove(key) {
      const at = lowerBound(key);
      if (keys[at] === key) keys.splice(at, 1);
    },
    withPrefix(prefix) {
      const out: string[] = [];
      for (let i = lowerBound(prefix); i < keys.length && keys[i]!.startsWith(prefix); i++) out.push(keys[i]!);
      return out;
    },
  };
}
