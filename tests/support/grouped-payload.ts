import type { JsonValue } from 'savepoint';

/**
 * `keys` members of ~6 KB each in groups of 20: far over a 16 KiB limit, so the members move to
 * part files, and then the groups (holding only references by then) move too. Shared by the
 * large-checkpoint tests and `npm run bench -- scaling`.
 */
export function groupedPayload(keys: number): JsonValue {
  const out: Record<string, Record<string, JsonValue>> = {};
  for (let k = 0; k < keys; k++) {
    const group = (out[`g${String(Math.floor(k / 20)).padStart(3, '0')}`] ??= {});
    group[`k${String(k).padStart(5, '0')}`] = { n: k, text: `${k}:`.padEnd(6000, 'abcdefghij') };
  }
  return out;
}
