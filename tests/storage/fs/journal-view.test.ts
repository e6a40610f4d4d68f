/*
 * A read asks the journal what it holds for one key not yet applied. Right after a run of
 * commits this process holds many records not yet applied; the answer for one key must not
 * walk them all (each document a reader reads would pay for every record of the run).
 */
import { describe, expect, it } from 'vitest';
import { unappliedKeyNow, unappliedNow } from '../../../src/storage/fs/journal/view.js';
import type { JournalState } from '../../../src/storage/fs/journal/state.js';
import type { Planned } from '../../../src/storage/fs/journal/planned.js';

const put = (key: string, text: string): Planned =>
  ({ op: { type: 'put', key, bytes: new TextEncoder().encode(text) }, outcome: { version: `v-${key}` } }) as unknown as Planned;

/** A map of records not yet applied that refuses to be walked; lookups by key still answer. */
function unwalkable(entries: [string, Planned][]): Map<string, Planned> {
  const map = new Map(entries);
  const refuse = (): never => {
    throw new Error('walked every record not yet applied');
  };
  return Object.assign(map, { [Symbol.iterator]: refuse, entries: refuse, keys: refuse, values: refuse, forEach: refuse });
}

function stateWith(pending: Map<string, Planned>): JournalState {
  return { pending, lockOurs: true, needRecovery: false } as unknown as JournalState;
}

describe('journal: one key not yet applied', () => {
  it('is answered by a lookup of that key, without walking the other records', () => {
    const records: [string, Planned][] = Array.from({ length: 100 }, (_, i) => [`t/parts/${i}/w.json`, put(`t/parts/${i}/w.json`, `${i}`)]);
    const s = stateWith(unwalkable(records));
    const got = unappliedKeyNow(s, 't/parts/7/w.json');
    expect([...(got ?? new Map()).keys()]).toEqual(['t/parts/7/w.json']);
    expect(got?.get('t/parts/7/w.json')).toEqual({ bytes: new TextEncoder().encode('7'), version: 'v-t/parts/7/w.json' });
    expect(unappliedKeyNow(s, 't/parts/7/w')?.size).toBe(0);
  });

  it('answers what the answer for the key as a prefix says of it, for keys that are prefixes of others', () => {
    const keys = ['a', 'a.json', 'a/b.json', 'ab.json', 'b.json'];
    const pending = new Map(keys.slice(1).map((k): [string, Planned] => [k, put(k, k)]));
    const s = stateWith(pending);
    for (const key of keys) {
      const narrow = unappliedKeyNow(s, key);
      const wide = unappliedNow(s, key);
      expect(narrow?.get(key)).toEqual(wide?.get(key));
      expect(narrow?.size).toBe(wide?.has(key) ? 1 : 0);
    }
  });
});
