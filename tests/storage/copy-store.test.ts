/**
 * `copyStore`: every key of one store copied into another, byte for byte — a packed fs directory
 * exported to the file layout and brought back, a sequential store (no batch) as the target, an
 * empty target required.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listAll, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { copyStore } from '../../src/storage/copy-store.js';
import { rejection } from '../support/rejection.js';
import { scratchDirs } from '../support/scratch.js';
import { sequentialMemory } from '../support/storages.js';

const newDir = scratchDirs('copy-store');

/** Every key of `store` with its bytes, in listing order. */
async function contents(store: StorageAdapter): Promise<[string, number[]][]> {
  const out: [string, number[]][] = [];
  for (const { key } of await listAll(store, '')) out.push([key, [...(await store.get(key))!.bytes]]);
  return out;
}

const keyArb = fc
  .array(fc.constantFrom('a', 'b', 'run-1', 'chunks', 'x.json', 'é'), { minLength: 1, maxLength: 3 })
  .map((parts) => parts.join('/'));

describe('copyStore', () => {
  it('a packed directory exported to the file layout and back holds the same keys and bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(keyArb, fc.uint8Array({ maxLength: 300 }), { maxKeys: 90 }), async (values) => {
        const packed = fsStorage({ dir: newDir(), layout: 'packed' });
        const files = fsStorage({ dir: newDir() });
        const back = fsStorage({ dir: newDir(), layout: 'packed' });
        try {
          // A key and a key below it cannot both be files: the file layout refuses the pair, so keep the first.
          const kept = Object.keys(values).filter(
            (k, _, all) => !all.some((o) => o !== k && (k.startsWith(`${o}/`) || o.startsWith(`${k}/`))),
          );
          for (const key of kept) await packed.put(key, values[key]!);
          const want = await contents(packed);
          const bytes = want.reduce((n, [, b]) => n + b.length, 0);
          expect(await copyStore(packed, files)).toEqual({ keys: want.length, bytes });
          expect(await contents(files)).toEqual(want);
          expect(await copyStore(files, back)).toEqual({ keys: want.length, bytes });
          expect(await contents(back)).toEqual(want);
        } finally {
          await Promise.all([packed.close(), files.close(), back.close()]);
        }
      }),
      { numRuns: 15 },
    );
  });

  it('copies a prefix only, into a store without a batch too, in steps (more keys than one step holds)', async () => {
    const from = memoryStorage();
    for (let i = 0; i < 150; i++) await from.put(`run/${String(i).padStart(3, '0')}`, Uint8Array.of(i));
    await from.put('other/k', Uint8Array.of(1));
    const to = sequentialMemory();
    expect(await copyStore(from, to, { prefix: 'run/' })).toEqual({ keys: 150, bytes: 150 });
    expect((await listAll(to, '')).length).toBe(150);
    expect([...(await to.get('run/149'))!.bytes]).toEqual([149]);
  });

  it('refuses a target that already holds a key under the prefix, and writes nothing', async () => {
    const from = memoryStorage();
    await from.put('a/1', Uint8Array.of(1));
    const to = memoryStorage();
    await to.put('a/0', Uint8Array.of(0));
    const err = await rejection(copyStore(from, to));
    expect(err.reasonCode).toBe('checkpoint_conflict');
    expect(await to.get('a/1')).toBeUndefined();
    expect(await copyStore(from, to, { prefix: 'b/' })).toEqual({ keys: 0, bytes: 0 });
  });
});
