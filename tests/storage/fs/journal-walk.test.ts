/**
 * Directories on a journaled commit's path (the LangGraph fs row): a key's
 * directory is opened from its parent, itself opened once through the hold's cache, so the
 * many new directories of one parent — a LangGraph thread's `parts/<sequence>/`, one per
 * superstep, often planned together — cost one open (and a mkdir) each instead of a walk from
 * the root each, and concurrent walks no longer race to make the same parent.
 */
import { fstatSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { scratchFolder } from '../../support/scratch.js';

const scratch = scratchFolder('fs-journal-walk');
let counter = 0;

/** The real calls, counting opens and mkdirs by the last component of their path. */
function countingIo(): { io: FsIo; opened: Map<string, number>; made: Map<string, number> } {
  const opened = new Map<string, number>();
  const made = new Map<string, number>();
  const last = (path: string): string => path.slice(path.lastIndexOf('/') + 1);
  const io: FsIo = {
    ...realIo,
    open: (path, flags, mode) => {
      opened.set(last(path), (opened.get(last(path)) ?? 0) + 1);
      return realIo.open(path, flags, mode);
    },
    mkdir: (path) => {
      made.set(last(path), (made.get(last(path)) ?? 0) + 1);
      return realIo.mkdir(path);
    },
  };
  return { io, opened, made };
}

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('fsStorage journal: directories on the commit path', () => {
  it('new directories under one parent are opened from it: the parent once, not once per new directory (regression: ten walks from the root)', async () => {
    const { io, opened, made } = countingIo();
    const dir = join(scratch, `w${counter++}`);
    const store = createFsStorage({ dir, journal: true }, { io });
    await store.batch!([{ type: 'put', key: 'thread/history/1.json', bytes: bytes('{}') }]);
    opened.clear();
    made.clear();
    const keys = Array.from({ length: 10 }, (_, i) => `thread/parts/${i + 1}/w.json`);
    await Promise.all(keys.map((key) => store.batch!([{ type: 'put', key, bytes: bytes(`"${key}"`), ifAbsent: true }])));
    await store.flush!();
    // `thread` is open already (or, after a lock hand-over, opened once); `parts` is made and opened once (when applied: see fs.journal-mkdir).
    expect(opened.get('thread') ?? 0).toBeLessThanOrEqual(1);
    expect(opened.get('parts') ?? 0).toBeLessThanOrEqual(2); // the failed open that finds it missing, then the open after its mkdir
    expect(made.get('parts')).toBe(1);
    for (const key of keys) expect(readFileSync(join(dir, key), 'utf8')).toBe(`"${key}"`);
    await store.close();
  });

  it('past the directories a hold keeps open, each new directory is walked from its open parent at apply (regression: a walk from the root each)', async () => {
    const { io, opened } = countingIo();
    const dir = join(scratch, `b${counter++}`);
    const store = createFsStorage({ dir, journal: true }, { io });
    await store.batch!([{ type: 'put', key: 'c/first/f.json', bytes: bytes('{}') }]);
    opened.clear();
    // More directories than a hold keeps open (MAX_CACHED_DIRS: 64), all in one parent, in one batch.
    const keys = Array.from({ length: 100 }, (_, i) => `c/d${i}/f.json`);
    await store.batch!(keys.map((key) => ({ type: 'put' as const, key, bytes: bytes(`"${key}"`) })));
    await store.flush!();
    expect(opened.get('c') ?? 0).toBeLessThanOrEqual(2);
    for (const key of keys) expect(readFileSync(join(dir, key), 'utf8')).toBe(`"${key}"`);
    await store.close();
  });

  it("the journal's checkpoint walks a parent once for all its directories (regression: a walk from the root for each)", async () => {
    const { io, opened } = countingIo();
    const dir = join(scratch, `k${counter++}`);
    const store = createFsStorage({ dir, journal: true }, { io });
    const keys = Array.from({ length: 20 }, (_, i) => `c/d${i}/f.json`);
    await store.batch!(keys.map((key) => ({ type: 'put' as const, key, bytes: bytes(`"${key}"`) })));
    await store.flush!();
    opened.clear();
    await store.close(); // checkpoints the journal: every file and directory it names fsynced
    expect(opened.get('c') ?? 0).toBe(1);
    for (let i = 0; i < 20; i++) expect(opened.get(`d${i}`)).toBe(1);
  });

  it("property: the journal's checkpoint fsyncs every file it names and every directory above each, whatever their parents share", async () => {
    const segment = fc.constantFrom('a', 'b', 'c');
    const keyArb = fc
      .tuple(fc.array(segment, { minLength: 0, maxLength: 3 }), fc.integer({ min: 0, max: 3 }))
      .map(([parts, n]) => [...parts, `f${n}.json`].join('/'));
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 16 }), async (keys) => {
        const synced = new Set<bigint>();
        const io: FsIo = {
          ...realIo,
          fsync: async (fd) => {
            synced.add(fstatSync(fd, { bigint: true }).ino);
            return realIo.fsync(fd);
          },
        };
        const dir = join(scratch, `s${counter++}`);
        const store = createFsStorage({ dir, journal: true }, { io });
        await store.batch!(keys.map((key) => ({ type: 'put' as const, key, bytes: bytes(key) })));
        await store.flush!();
        synced.clear();
        await store.close();
        for (const key of keys) {
          expect(synced.has(statSync(join(dir, key), { bigint: true }).ino)).toBe(true);
          for (let d = dirname(key); ; d = dirname(d)) {
            expect(synced.has(statSync(join(dir, d), { bigint: true }).ino)).toBe(true);
            if (d === '.') break;
          }
        }
      }),
      { numRuns: 25 },
    );
  });

  it('property: puts into new nested directories, committed at once or one by one, all land where their keys say', async () => {
    const segment = fc.constantFrom('a', 'b', 'c', 'd');
    const keyArb = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `${parts.join('/')}/f.json`);
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 12 }), fc.boolean(), async (keys, together) => {
        const dir = join(scratch, `p${counter++}`);
        const store = createFsStorage({ dir, journal: true });
        // Directories are made of segments a–d and files are all named f.json: no key's directory is another key's file.
        const usable = keys;
        const put = (key: string) => store.batch!([{ type: 'put', key, bytes: bytes(key), ifAbsent: true }]);
        if (together) await Promise.all(usable.map(put));
        else for (const key of usable) await put(key);
        await store.flush!();
        for (const key of usable) expect(readFileSync(join(dir, key), 'utf8')).toBe(key);
        await store.close();
      }),
      { numRuns: 25 },
    );
  });
});
