/**
 * The journal's applies wait for a lull in the commits: an apply's file
 * creations and renames beside a commit's O_DSYNC write slowed it two- to threefold, and a
 * LangGraph thread's chain of puts — each issued as the one before is answered — paid that at
 * every superstep. Applies start once no commit has come for a few ms (at most a bounded lag
 * after the first waiting group); flush() applies at once; nothing acknowledged is lost.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-lull');
const text = (s: string): Uint8Array => utf8Encode(s);

/** Real calls; renames counted as issued and as done. */
function countingIo(): { io: FsIo; renames(): number; renamed(): number } {
  let renames = 0;
  let renamed = 0;
  return {
    io: {
      ...realIo,
      rename: async (from, to) => {
        renames++;
        await realIo.rename(from, to);
        renamed++;
      },
    },
    renames: () => renames,
    renamed: () => renamed,
  };
}

describe('fsStorage journal: applies wait for a lull in the commits', () => {
  it('a chain of commits, each issued as the one before is answered, renames nothing until it pauses (regression: an apply after every commit, beside the next one)', async () => {
    const dir = fresh();
    const counted = countingIo();
    // The lag bound out of the way, and a lull longer than a loaded machine's gap between two commits of the chain
    // (3 ms by default: under a full test run a gap that long started an apply mid-chain).
    const store = createFsStorage(
      { dir, journal: true },
      { io: counted.io, journalLingerMs: 60_000, journalApplyLagMs: 60_000, journalApplyQuietMs: 250 },
    );
    await store.ready();
    try {
      for (let i = 0; i < 10; i++) {
        await store.batch!([
          { type: 'put', key: `t/history/${i}.json`, bytes: text(`h${i}`), ifAbsent: true },
          { type: 'put', key: 't/latest.json', bytes: text(`latest ${i}`) },
        ]);
      }
      expect(counted.renames()).toBe(0);
      // Once the commits pause the files land, without a flush.
      for (let k = 0; k < 1_000_000 && counted.renamed() < 11; k++) await new Promise((r) => setImmediate(r));
      // Ten history files and one latest.json: the chain's groups were applied together.
      expect(counted.renames()).toBe(11);
      expect(readFileSync(join(dir, 't/latest.json'), 'utf8')).toBe('latest 9');
    } finally {
      await store.close();
    }
  });

  it('commits that never pause are applied within the lag bound', async () => {
    const dir = fresh();
    const counted = countingIo();
    const store = createFsStorage(
      { dir, journal: true },
      { io: counted.io, journalLingerMs: 60_000, journalApplyQuietMs: 60_000, journalApplyLagMs: 5 },
    );
    await store.ready();
    try {
      await store.put('k/a.json', text('a'));
      for (let k = 0; k < 1_000_000 && counted.renamed() < 1; k++) await new Promise((r) => setImmediate(r));
      expect(readFileSync(join(dir, 'k/a.json'), 'utf8')).toBe('a');
    } finally {
      await store.close();
    }
  });

  it('flush() applies at once, whatever the lull still waits for', async () => {
    const dir = fresh();
    const store = createFsStorage(
      { dir, journal: true },
      { journalLingerMs: 60_000, journalApplyQuietMs: 600_000, journalApplyLagMs: 600_000 },
    );
    try {
      await store.put('f/a.json', text('a'));
      const started = Date.now();
      await store.flush!();
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(readFileSync(join(dir, 'f/a.json'), 'utf8')).toBe('a');
    } finally {
      await store.close();
    }
  });
});
