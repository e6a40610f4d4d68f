/**
 * memoryStorage keeps its keys in listing order as they come and go (src/storage/sorted-keys.ts),
 * so that listing a prefix does not scan the whole store. What it lists must be exactly what a
 * scan and sort would list, after any sequence of puts, deletes and batches.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { sortedKeys } from '../../../src/storage/sorted-keys.js';

// Few characters, so keys share prefixes and collide; the two above U+D7FF order differently in
// UTF-16 code units than in code points, which is the order listings promise.
const segment = fc.string({ unit: fc.constantFrom('a', 'b', '-', '\uE000', '\u{1F600}'), minLength: 1, maxLength: 3 });
const key = fc.tuple(fc.constantFrom('r1', 'r2', 'r10'), segment).map(([run, name]) => `${run}/${name}`);
const op = fc.oneof(
  fc.record({ type: fc.constant('put' as const), key }),
  fc.record({ type: fc.constant('delete' as const), key }),
  // A batch names a key once (it refuses one named twice).
  fc.record({
    type: fc.constant('batch' as const),
    items: fc.uniqueArray(fc.record({ key, put: fc.boolean() }), { maxLength: 4, selector: (i) => i.key }),
  }),
);
const prefix = fc.constantFrom('', 'r', 'r1', 'r1/', 'r10/', 'r2/a', 'r3/');

async function listed(storage: ReturnType<typeof memoryStorage>, p: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of storage.list(p)) out.push(e.key);
  return out;
}

describe('memoryStorage listing order', () => {
  it('lists exactly the keys a scan and sort of the store would, after any puts, deletes and batches', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.array(prefix, { minLength: 1, maxLength: 4 }), async (ops, prefixes) => {
        const storage = memoryStorage();
        const model = new Set<string>();
        const bytes = new Uint8Array([1]);
        for (const o of ops) {
          if (o.type === 'put') {
            await storage.put(o.key, bytes);
            model.add(o.key);
          } else if (o.type === 'delete') {
            await storage.delete(o.key);
            model.delete(o.key);
          } else {
            await storage.batch!(
              o.items.map((i) => (i.put ? { type: 'put' as const, key: i.key, bytes } : { type: 'delete' as const, key: i.key })),
            );
            for (const i of o.items) {
              if (i.put) model.add(i.key);
              else model.delete(i.key);
            }
          }
        }
        for (const p of prefixes) expect(await listed(storage, p)).toEqual([...model].filter((k) => k.startsWith(p)).sort());
      }),
      { numRuns: 300 },
    );
  });

  it('a listing is a snapshot: keys added or deleted while a caller walks it do not disturb the walk', async () => {
    const storage = memoryStorage();
    const bytes = new Uint8Array([1]);
    for (const k of ['r/a', 'r/b', 'r/c']) await storage.put(k, bytes);
    const seen: string[] = [];
    for await (const e of storage.list('r/')) {
      seen.push(e.key);
      if (e.key === 'r/a') {
        await storage.put('r/aa', bytes);
        await storage.delete('r/c');
      }
    }
    // A key deleted before the walk reaches it is not listed (its cell is gone); one added is not either.
    expect(seen).toEqual(['r/a', 'r/b']);
    expect(await listed(storage, 'r/')).toEqual(['r/a', 'r/aa', 'r/b']);
  });

  it('sortedKeys in small chunks (split when full, dropped when empty) lists what a sorted set would, for every prefix', () => {
    const chunkKey = fc.string({ unit: fc.constantFrom('a', 'b', '/', '\uE000', '\u{1F600}'), maxLength: 4 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.boolean(), chunkKey), { maxLength: 80 }),
        fc.array(chunkKey, { maxLength: 4 }),
        (chunk, ops, prefixes) => {
          const keys = sortedKeys(chunk);
          const model = new Set<string>();
          for (const [add, k] of ops) {
            if (add) {
              keys.add(k);
              model.add(k);
            } else {
              keys.remove(k);
              model.delete(k);
            }
          }
          const sorted = [...model].sort();
          for (const p of ['', ...prefixes]) expect(keys.withPrefix(p)).toEqual(sorted.filter((k) => k.startsWith(p)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('sortedKeys placing added keys only when listed or removed: every list in between, at any point, is what a sorted set would list', () => {
    const key = fc.string({ unit: fc.constantFrom('a', 'b', '/', '\uE000'), maxLength: 3 });
    const op = fc.oneof(
      fc.tuple(fc.constant('add' as const), key),
      fc.tuple(fc.constant('remove' as const), key),
      fc.tuple(fc.constant('list' as const), key),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 60 }), (chunk, ops) => {
        const keys = sortedKeys(chunk);
        const model = new Set<string>();
        for (const [what, k] of ops) {
          if (what === 'add') {
            keys.add(k);
            model.add(k);
          } else if (what === 'remove') {
            keys.remove(k);
            model.delete(k);
          } else expect(keys.withPrefix(k)).toEqual([...model].sort().filter((m) => m.startsWith(k)));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('memoryStorage: the puts of a batch that carry the same bytes share one copy, and each reads back its own bytes', async () => {
    const storage = memoryStorage();
    const bytes = new TextEncoder().encode('same');
    await storage.batch!([
      { type: 'put', key: 'b/1', bytes },
      { type: 'put', key: 'b/2', bytes },
      { type: 'delete', key: 'b/0' },
      { type: 'put', key: 'b/3', bytes },
    ]);
    await storage.delete('b/1');
    bytes.fill(0);
    const first = await storage.get('b/2');
    first!.bytes.fill(0x21);
    expect(new TextDecoder().decode((await storage.get('b/2'))!.bytes)).toBe('same');
    expect(new TextDecoder().decode((await storage.get('b/3'))!.bytes)).toBe('same');
    expect(await storage.get('b/1')).toBeUndefined();
    expect(await listed(storage, 'b/')).toEqual(['b/2', 'b/3']);
  });

  it('sortedKeys ignores a second add and a remove of a key it does not hold', () => {
    const keys = sortedKeys();
    for (const k of ['b', 'a', 'c', 'c', 'a', 'b']) keys.add(k);
    keys.remove('zz');
    keys.remove('a');
    expect(keys.withPrefix('')).toEqual(['b', 'c']);
  });
});
