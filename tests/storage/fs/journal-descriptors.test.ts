/**
 * The journal holds a bounded number of descriptors whatever the size of a batch (regression:
 * one open temp file per put from its planning to the journal checkpoint, and one directory per
 * directory of the batch, so a batch of a few thousand puts — a large document's content chunks —
 * failed with EMFILE). Every call goes through a counting FsIo: the most descriptors open at once
 * stays under the budget while random batches of hundreds of puts and deletes, over up to 400
 * directories, are committed one after another and at once; every key reads back and lands on
 * disk as a model says, and a closed store holds none (nor counts any).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from '../../../src/contract/storage.js';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { openTempDescriptors } from '../../../src/storage/fs/descriptor-budget.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { keptDescriptors } from '../../../src/storage/fs/journal/index.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-descriptors');
/** The budget the process test runs under (`ulimit -n 512`), less room for the runtime's own descriptors. */
const BUDGET = 448;

/** The real calls, counting the descriptors open through them (and the most at once). */
function countingIo(): { io: FsIo; open: () => number; most: () => number } {
  const fds = new Set<number>();
  let most = 0;
  const io: FsIo = {
    ...realIo,
    async open(path, flags, mode) {
      const fd = await realIo.open(path, flags, mode);
      fds.add(fd);
      most = Math.max(most, fds.size);
      return fd;
    },
    async close(fd) {
      fds.delete(fd);
      await realIo.close(fd);
    },
  };
  return { io, open: () => fds.size, most: () => most };
}

interface Op {
  readonly dir: number;
  readonly name: number;
  readonly del: boolean;
}
const keyOf = (op: Op): string => `runs/d${op.dir}/k${op.name}.json`;
const batchOf = (dirs: number): fc.Arbitrary<Op[]> =>
  fc
    .array(fc.record({ dir: fc.nat(dirs - 1), name: fc.nat(5000), del: fc.nat(7).map((n) => n === 0) }), { minLength: 600, maxLength: 900 })
    // A batch names each key once.
    .map((ops) => [...new Map(ops.map((op) => [keyOf(op), op])).values()]);

describe('fsStorage journal: descriptors stay within the budget whatever the batch', () => {
  it('property: random batches of hundreds of puts and deletes, one after another and at once, land as a model says', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 400 }).chain((dirs) => fc.array(batchOf(dirs), { minLength: 1, maxLength: 3 })),
        fc.boolean(),
        async (batches, together) => {
          const dir = fresh();
          // The process's counts, which other files' stores in this worker may hold part of:
          // this store must give back all it took (its own descriptors are counted exactly below).
          const keptBefore = keptDescriptors();
          const tempsBefore = openTempDescriptors();
          const counting = countingIo();
          const storage = createFsStorage({ dir, journal: true }, { io: counting.io });
          const model = new Map<string, string>();
          const commit = (ops: readonly Op[], round: number): Promise<unknown> =>
            storage.batch!(
              ops.map((op): BatchOperation =>
                op.del ? { type: 'delete', key: keyOf(op) } : { type: 'put', key: keyOf(op), bytes: utf8Encode(`${keyOf(op)} ${round}`) },
              ),
            );
          const rounds = batches.map((ops, round) => () => commit(ops, round));
          if (together) await Promise.all(rounds.map((r) => r()));
          else for (const r of rounds) await r();
          // Batches at once commit in call order (one group), each key's last operation wins.
          batches.forEach((ops, round) => {
            for (const op of ops) {
              if (op.del) model.delete(keyOf(op));
              else model.set(keyOf(op), `${keyOf(op)} ${round}`);
            }
          });
          for (const [key, value] of model) expect(new TextDecoder().decode((await storage.get(key))!.bytes)).toBe(value);
          await storage.close();
          expect(counting.most()).toBeLessThanOrEqual(BUDGET);
          expect(counting.open()).toBe(0);
          expect(openTempDescriptors()).toBeLessThanOrEqual(tempsBefore);
          expect(keptDescriptors()).toBeLessThanOrEqual(keptBefore);
          for (const ops of batches)
            for (const op of ops) {
              const want = model.get(keyOf(op));
              const path = join(dir, keyOf(op));
              if (want === undefined) expect(existsSync(path)).toBe(false);
              else expect(readFileSync(path, 'utf8')).toBe(want);
            }
        },
      ),
      { numRuns: 4, endOnFailure: true },
    );
  }, 240_000);
});
