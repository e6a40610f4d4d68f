/**
 * Directories emptied by a journaled delete are pruned, and only those: once a run is at its
 * retention bound, every checkpoint puts a history file in and deletes the oldest one from
 * the same directory, and an rmdir there after each delete always failed (ENOTEMPTY) — one
 * wasted thread-pool call per checkpoint.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-prune');
const text = (s: string): Uint8Array => utf8Encode(s);

function countingRmdir(): { io: FsIo; rmdirs(): number } {
  let rmdirs = 0;
  return {
    io: {
      ...realIo,
      rmdir: (path) => {
        rmdirs++;
        return realIo.rmdir(path);
      },
    },
    rmdirs: () => rmdirs,
  };
}

describe('fsStorage journal: pruning directories after deletes', () => {
  it('a batch that puts a file into a directory and deletes another from it tries no rmdir there (regression: one failing rmdir per checkpoint)', async () => {
    const dir = fresh();
    const counted = countingRmdir();
    const store = createFsStorage({ dir, journal: true }, { io: counted.io });
    try {
      for (let i = 0; i < 3; i++) await store.put(`run/history/${i}.json`, text(`h${i}`));
      await store.flush!();
      const before = counted.rmdirs();
      // A run at its bound: each checkpoint adds the newest history file and deletes the oldest.
      for (let i = 3; i < 13; i++) {
        await store.batch!([
          { type: 'put', key: `run/history/${i}.json`, bytes: text(`h${i}`), ifAbsent: true },
          { type: 'put', key: 'run/latest.json', bytes: text(`latest ${i}`) },
          { type: 'delete', key: `run/history/${i - 3}.json` },
        ]);
        await store.flush!();
      }
      expect(counted.rmdirs() - before).toBe(0);
      expect(readdirSync(join(dir, 'run/history')).sort()).toEqual(['10.json', '11.json', '12.json']);
    } finally {
      await store.close();
    }
  });

  it('a record of many deletes in a directory that keeps files tries one rmdir there, not one per delete (regression: a try after each)', async () => {
    const dir = fresh();
    const counted = countingRmdir();
    const store = createFsStorage({ dir, journal: true }, { io: counted.io });
    try {
      await store.batch!(Array.from({ length: 21 }, (_, i) => ({ type: 'put' as const, key: `chunks/ab/c${i}`, bytes: text(`c${i}`) })));
      await store.flush!();
      const before = counted.rmdirs();
      await store.batch!(Array.from({ length: 20 }, (_, i) => ({ type: 'delete' as const, key: `chunks/ab/c${i}` })));
      await store.flush!();
      expect(counted.rmdirs() - before).toBeLessThanOrEqual(1);
      expect(readdirSync(join(dir, 'chunks/ab'))).toEqual(['c20']);
    } finally {
      await store.close();
    }
  });

  it("a record's deletes are applied several at once (regression: one unlink after the other)", async () => {
    const dir = fresh();
    let inFlight = 0;
    let most = 0;
    const io: FsIo = {
      ...realIo,
      unlink: async (path) => {
        most = Math.max(most, ++inFlight);
        try {
          return await realIo.unlink(path);
        } finally {
          inFlight--;
        }
      },
    };
    const store = createFsStorage({ dir, journal: true }, { io });
    try {
      const keys = Array.from({ length: 32 }, (_, i) => `chunks/${(i % 16).toString(16).padStart(2, '0')}/c${i}`);
      await store.batch!(keys.map((key) => ({ type: 'put' as const, key, bytes: text(key) })));
      await store.flush!();
      most = 0;
      await store.batch!(keys.map((key) => ({ type: 'delete' as const, key })));
      await store.flush!();
      expect(most).toBeGreaterThan(1);
      expect(existsSync(join(dir, 'chunks'))).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('a delete that empties a directory still prunes it and its emptied parents', async () => {
    const dir = fresh();
    const counted = countingRmdir();
    const store = createFsStorage({ dir, journal: true }, { io: counted.io });
    try {
      await store.batch!([
        { type: 'put', key: 'run/parts/7/w_a.json', bytes: text('a') },
        { type: 'put', key: 'run/latest.json', bytes: text('l') },
      ]);
      await store.flush!();
      // The latest file stays in `run/`, so `parts/7/` and `parts/` go and `run/` stays.
      await store.batch!([{ type: 'delete', key: 'run/parts/7/w_a.json' }]);
      await store.flush!();
      expect(existsSync(join(dir, 'run/parts'))).toBe(false);
      expect(existsSync(join(dir, 'run/latest.json'))).toBe(true);
      expect(counted.rmdirs()).toBeGreaterThanOrEqual(2);
    } finally {
      await store.close();
    }
  });

  it('property: after any batches of puts and deletes, no directory under the root is left empty and every present key is there', async () => {
    const key = fc
      .tuple(fc.constantFrom('a', 'b'), fc.constantFrom('x', 'y'), fc.integer({ min: 0, max: 3 }))
      .map(([r, d, n]) => `${r}/${d}/${n}.json`);
    const op = fc.oneof(
      key.map((k) => ({ type: 'put' as const, key: k })),
      key.map((k) => ({ type: 'delete' as const, key: k })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }), async (batches) => {
        const dir = fresh();
        const store = createFsStorage({ dir, journal: true });
        const present = new Set<string>();
        try {
          for (const batch of batches) {
            // One operation per key in a batch, as a checkpoint's batch has.
            const seen = new Set<string>();
            const ops = batch.filter((o) => !seen.has(o.key) && seen.add(o.key));
            await store.batch!(
              ops.map((o) => (o.type === 'put' ? { type: 'put', key: o.key, bytes: text(o.key) } : { type: 'delete', key: o.key })),
            );
            for (const o of ops) {
              if (o.type === 'put') present.add(o.key);
              else present.delete(o.key);
            }
          }
          await store.flush!();
          for (const k of present) expect(existsSync(join(dir, k))).toBe(true);
          const empty = (d: string): string[] =>
            readdirSync(d, { withFileTypes: true })
              .filter((e) => e.isDirectory())
              .flatMap((e) => {
                const sub = join(d, e.name);
                return readdirSync(sub).length === 0 ? [sub] : empty(sub);
              });
          expect(empty(dir)).toEqual([]);
        } finally {
          await store.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});
