/**
 * The journal's checkpoint and keys whose last record is a delete (a delete, or a move's
 * source): no open of a file that is gone (it failed with ENOENT, one a key), and still the
 * fsync of its directory, so that a power loss after the journal is emptied keeps the unlink.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { moveOf } from '../../../src/contract/move.js';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { durableState } from '../../support/power-loss/crash-states.js';
import { readTree, writeTree } from '../../support/power-loss/model.js';
import { record } from '../../support/power-loss/recorder.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-checkpoint-gone');
const text = (s: string): Uint8Array => utf8Encode(s);
const DIRS = ['chunks/aa', 'chunks/bb'];

/** A store directory holding `keys` on disk (each its own name as bytes), its journal checkpointed (closed). */
async function seeded(keys: readonly string[]): Promise<string> {
  const dir = fresh();
  const store = createFsStorage({ dir, journal: true });
  for (const key of keys) await store.put(key, text(key));
  await store.close();
  return dir;
}

/** Opens that fail with ENOENT on a file named in `names`. */
function countingIo(names: ReadonlySet<string>): { io: FsIo; failedOpens: string[] } {
  const failedOpens: string[] = [];
  return {
    io: {
      ...realIo,
      open: async (path, flags, mode) => {
        try {
          return await realIo.open(path, flags, mode);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT' && names.has(basename(path))) failedOpens.push(path);
          throw err;
        }
      },
    },
    failedOpens,
  };
}

describe('fsStorage journal: the checkpoint of deleted keys', () => {
  it('opens no file of a deleted key or of a moved file’s source (N deletes, N moves of files durable before)', async () => {
    const N = 6;
    const deleted = Array.from({ length: N }, (_, i) => `${DIRS[i % 2]}/del${i}`);
    const moved = Array.from({ length: N }, (_, i) => `${DIRS[i % 2]}/mov${i}`);
    const kept = DIRS.map((d) => `${d}/keep`);
    const dir = await seeded([...deleted, ...moved, ...kept]);
    const counting = countingIo(new Set([...deleted, ...moved].map((k) => basename(k))));
    const store = createFsStorage({ dir, journal: true }, { io: counting.io });
    for (const key of deleted) expect(await store.delete(key)).toBe(true);
    for (const key of moved) expect(await moveOf(store)!(key, `${key}.hidden-1`)).toBe(true);
    await store.close();
    // Before: each of the 2N keys' files was opened at the checkpoint and not found.
    expect(counting.failedOpens).toEqual([]);
    const reopened = createFsStorage({ dir, journal: true });
    try {
      for (const key of [...deleted, ...moved]) expect(await reopened.get(key)).toBeUndefined();
      for (const key of moved) expect(utf8Decode((await reopened.get(`${key}.hidden-1`))!.bytes)).toBe(key);
    } finally {
      await reopened.close();
    }
  });

  it('a put, delete or move on files durable before the window or written in it: after the checkpoint, a power loss keeps each key’s last state', async () => {
    const names = DIRS.flatMap((d) => [0, 1, 2].map((i) => `${d}/k${i}`));
    const op = fc.oneof(
      fc.record({ t: fc.constant('put' as const), key: fc.constantFrom(...names), n: fc.nat(99) }),
      fc.record({ t: fc.constant('delete' as const), key: fc.constantFrom(...names) }),
      fc.record({ t: fc.constant('move' as const), key: fc.constantFrom(...names), to: fc.constantFrom(...names) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.subarray(names, { minLength: 1 }), fc.array(op, { minLength: 1, maxLength: 12 }), async (seed, ops) => {
        const dir = await seeded([...seed, ...DIRS.map((d) => `${d}/keep`)]);
        const expected = new Map<string, string>(seed.map((k) => [k, k]));
        const base = readTree(dir);
        const rec = record(dir, base);
        try {
          // A small journal file: commits switch files and the full one is checkpointed beside them.
          const store = createFsStorage({ dir, journal: true, journalCheckpointBytes: 200 });
          for (const o of ops) {
            if (o.t === 'put') {
              await store.put(o.key, text(`${o.key}#${o.n}`));
              expected.set(o.key, `${o.key}#${o.n}`);
            } else if (o.t === 'delete') {
              await store.delete(o.key);
              expected.delete(o.key);
            } else if (expected.has(o.key) && !expected.has(o.to)) {
              expect(await moveOf(store)!(o.key, o.to)).toBe(true);
              expected.set(o.to, expected.get(o.key)!);
              expected.delete(o.key);
            }
          }
          await store.close();
        } finally {
          rec.stop();
        }
        // Every call not made durable is lost: what the checkpoint left is all there is.
        const after = lostPowerDir();
        writeTree(durableState(base, rec.ops), after.dir);
        const store = createFsStorage({ dir: after.dir, journal: true });
        try {
          for (const key of names) {
            const got = await store.get(key);
            expect([key, got && utf8Decode(got.bytes)]).toEqual([key, expected.get(key)]);
          }
        } finally {
          await store.close();
          after.dispose();
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});

const disposals: (() => void)[] = [];
afterEach(() => {
  for (const d of disposals.splice(0)) d();
});

/** An empty directory for a power loss's state. */
function lostPowerDir(): { dir: string; dispose(): void } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'savepoint-gone-')));
  const dispose = (): void => rmSync(dir, { recursive: true, force: true });
  disposals.push(dispose);
  return { dir, dispose };
}
