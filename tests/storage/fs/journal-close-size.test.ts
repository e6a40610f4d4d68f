/**
 * A closed store gives its journal's preallocated files back to the disk: the journal is
 * emptied at close, so the zeros each file was preallocated with (about
 * `journalCheckpointBytes`) would otherwise be most of a small store's size. What was
 * acknowledged reads back after any mix of closes, reopens and a second instance that kept
 * writing to the files another one cut.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { fsStorage, type FsStorage } from '../../../src/entries/fs.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-close-size');
const text = (s: string): Uint8Array => utf8Encode(s);

/** Sizes of the journal's files in `dir` (none when the journal was never opened). */
function journalSizes(dir: string): number[] {
  return readdirSync(dir)
    .filter((name) => name.startsWith('.sp\\journal'))
    .map((name) => statSync(join(dir, name)).size);
}

async function readAll(store: FsStorage, keys: Iterable<string>): Promise<Map<string, string | undefined>> {
  const found = new Map<string, string | undefined>();
  for (const key of keys) {
    const got = await store.get(key);
    found.set(key, got ? utf8Decode(got.bytes) : undefined);
  }
  return found;
}

describe('fsStorage journal: the closed store keeps no preallocated journal bytes', () => {
  it('close() cuts both journal files to nothing; what was written reads back after reopening, and the store keeps writing (regression: 2.3 MB of zeros left behind)', async () => {
    const dir = fresh();
    // Small journal files, so that the writes below fill one and commits switch to the other.
    const first = fsStorage({ dir, journalCheckpointBytes: 16 * 1024 });
    for (let i = 0; i < 40; i++) await first.put(`t/history/${i}.json`, text(`checkpoint ${i} `.repeat(50)));
    expect(journalSizes(dir).some((size) => size > 0)).toBe(true);
    await first.close();
    expect(journalSizes(dir).length).toBeGreaterThan(0);
    expect(journalSizes(dir).every((size) => size === 0)).toBe(true);

    const second = fsStorage({ dir, journalCheckpointBytes: 16 * 1024 });
    try {
      const read = await readAll(second, ['t/history/0.json', 't/history/39.json']);
      expect(read.get('t/history/39.json')).toBe('checkpoint 39 '.repeat(50));
      await second.put('t/history/40.json', text('after reopening'));
      expect(utf8Decode((await second.get('t/history/40.json'))!.bytes)).toBe('after reopening');
    } finally {
      await second.close();
    }
    expect(journalSizes(dir).every((size) => size === 0)).toBe(true);
  });

  it('property: two instances writing, closing and reopening in any order lose nothing acknowledged', async () => {
    const step = fc.record({
      instance: fc.constantFrom(0, 1),
      action: fc.constantFrom('put', 'put', 'put', 'close'),
      key: fc.integer({ min: 0, max: 5 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 24 }), async (steps) => {
        const dir = fresh();
        const open = (): FsStorage => fsStorage({ dir, journalCheckpointBytes: 4 * 1024 });
        const stores: (FsStorage | undefined)[] = [undefined, undefined];
        const model = new Map<string, string>();
        try {
          for (const [n, { instance, action, key }] of steps.entries()) {
            if (action === 'close') {
              await stores[instance]?.close();
              stores[instance] = undefined;
              continue;
            }
            const store = (stores[instance] ??= open());
            const value = `step ${n} `.repeat(40);
            await store.put(`k/${key}.json`, text(value));
            model.set(`k/${key}.json`, value);
          }
        } finally {
          for (const store of stores) await store?.close();
        }
        const reader = open();
        try {
          const read = await readAll(reader, model.keys());
          for (const [key, value] of model) expect(read.get(key)).toBe(value);
        } finally {
          await reader.close();
        }
        expect(journalSizes(dir).every((size) => size === 0)).toBe(true);
      }),
      { numRuns: 25 },
    );
  });
});
