/**
 * fsStorage's move on the journal: a file on disk is moved by a record of its own kind (no copy
 * of its bytes, no new file), applied as a rename; the record's replay reaches the move's end
 * state from every step of its apply, and a fault at every call of that apply loses nothing.
 */
import { existsSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { moveOf } from '../../../src/contract/move.js';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { decodeJournal, encodeRecord, JOURNAL_NAME, type JournalOp } from '../../../src/storage/fs/journal/index.js';
import { faultAtEveryCall } from '../../support/fs-faults.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-move');
const text = (s: string): Uint8Array => utf8Encode(s);
const SOURCE = 'chunks/ab/abc';
const TARGET = 'chunks/ab/abc.hidden-1000';

/** A store directory holding SOURCE on disk, its journal checkpointed (closed). */
async function seeded(bytes = 'the chunk'): Promise<string> {
  const dir = fresh();
  const store = createFsStorage({ dir });
  await store.put(SOURCE, text(bytes));
  await store.put('chunks/ab/other', text('other'));
  await store.close();
  return dir;
}

/** Every journal record this io writes, decoded (by magic: "SPJ2", "SPJ3"). */
function recordingIo(): { io: FsIo; magics: string[] } {
  const magics: string[] = [];
  return {
    io: {
      ...realIo,
      writeAt: (fd, bytes, at) => {
        if (bytes.length > 20 && bytes[0] === 0x53 && bytes[1] === 0x50 && bytes[2] === 0x4a)
          magics.push(String.fromCharCode(...bytes.subarray(0, 4)));
        return realIo.writeAt(fd, bytes, at);
      },
    },
    magics,
  };
}

describe('fsStorage journal: move', () => {
  it('moves a file on disk by rename: the same inode under the target, a version of its own, the source gone, durable across a reopen', async () => {
    const dir = await seeded();
    const ino = statSync(join(dir, SOURCE)).ino;
    const rec = recordingIo();
    const store = createFsStorage({ dir }, { io: rec.io });
    const before = (await store.get(SOURCE))!.version;
    try {
      expect(await moveOf(store)!(SOURCE, TARGET)).toBe(true);
      const moved = (await store.get(TARGET))!;
      expect(utf8Decode(moved.bytes)).toBe('the chunk');
      expect(moved.version).not.toBe(before);
      expect(await store.get(SOURCE)).toBeUndefined();
      await store.flush!();
      const st = statSync(join(dir, TARGET), { bigint: true });
      expect(Number(st.ino)).toBe(ino);
      expect(`${st.mtimeNs}.${st.ino}.${st.size}`).toBe(moved.version);
      expect(existsSync(join(dir, SOURCE))).toBe(false);
      expect(rec.magics).toEqual(['SPJ3']);
    } finally {
      await store.close();
    }
    const again = createFsStorage({ dir });
    try {
      expect(utf8Decode((await again.get(TARGET))!.bytes)).toBe('the chunk');
      expect(await again.get(SOURCE)).toBeUndefined();
    } finally {
      await again.close();
    }
  });

  it('moves by rename past the directories a hold keeps open (a sweep over many chunk directories at once)', async () => {
    const dir = fresh();
    const keys = Array.from({ length: 90 }, (_, i) => `chunks/${i.toString(16).padStart(2, '0')}/c${i}`);
    const seeding = createFsStorage({ dir });
    await seeding.batch!(keys.map((key) => ({ type: 'put' as const, key, bytes: text(key) })));
    await seeding.close();
    const inodes = keys.map((key) => statSync(join(dir, key)).ino);
    const store = createFsStorage({ dir });
    try {
      const move = moveOf(store)!;
      expect(await Promise.all(keys.map((key) => move(key, `${key}.hidden-1`)))).toEqual(keys.map(() => true));
      await store.flush!();
      keys.forEach((key, i) => {
        expect(existsSync(join(dir, key)), key).toBe(false);
        expect(statSync(join(dir, `${key}.hidden-1`)).ino, key).toBe(inodes[i]);
      });
    } finally {
      await store.close();
    }
  });

  it('moves a key whose put is not applied yet by a copy (a record an older reader reads), with the same outcome', async () => {
    const dir = fresh();
    const rec = recordingIo();
    const store = createFsStorage({ dir }, { io: rec.io });
    try {
      await store.put(SOURCE, text('fresh'));
      expect(await moveOf(store)!(SOURCE, TARGET)).toBe(true);
      expect(utf8Decode((await store.get(TARGET))!.bytes)).toBe('fresh');
      expect(await store.get(SOURCE)).toBeUndefined();
      expect(rec.magics).toEqual(['SPJ2', 'SPJ2']);
      await store.flush!();
      expect(readFileSync(join(dir, TARGET), 'utf8')).toBe('fresh');
      expect(existsSync(join(dir, SOURCE))).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('a record holding a move starts with a magic of its own; one without keeps the old one', () => {
    const moved = encodeRecord(
      [
        ['m', SOURCE, TARGET, '1.2.3'],
        ['d', SOURCE],
      ],
      [],
      5,
    );
    const plain = encodeRecord([['d', SOURCE]], [], 5);
    expect(String.fromCharCode(...moved.subarray(0, 4))).toBe('SPJ3');
    expect(String.fromCharCode(...plain.subarray(0, 4))).toBe('SPJ2');
    const both = new Uint8Array([...plain, ...moved]);
    expect(decodeJournal(both).records.map((r) => r.ops.map((o) => o.type))).toEqual([['delete'], ['move', 'delete']]);
  });

  /**
   * The replay of a move from each step its apply can have reached when the process died: none,
   * the source's new mtime set, the rename done — with a later record putting the source again
   * (a chunk written home after it was hidden) or not, and with the source's own put still in
   * the journal (its file not durable: damaged here) or not.
   */
  it('property: a replay reaches the move end state from every step of its apply', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0, 1, 2), fc.boolean(), fc.boolean(), async (step, putAgain, sourceInJournal) => {
        const dir = await seeded();
        const src = join(dir, SOURCE);
        const ino = statSync(src, { bigint: true }).ino;
        const seconds = Math.floor(Date.now() / 1000) + 10;
        const version = `${BigInt(seconds) * 1_000_000_000n}.${ino}.9`;
        const records: [JournalOp[], Uint8Array[]][] = [];
        if (sourceInJournal) records.push([[['p', SOURCE, 9, `1.${ino}.9`]], [text('the chunk')]]);
        records.push([
          [
            ['m', SOURCE, TARGET, version],
            ['d', SOURCE],
          ],
          [],
        ]);
        if (putAgain) records.push([[['p', SOURCE, 5, '2.1.5']], [text('again')]]);
        const epoch = 77;
        writeFileSync(join(dir, JOURNAL_NAME), Buffer.concat(records.map(([ops, payloads]) => encodeRecord(ops, payloads, epoch))));
        // Damaged when its put is still journaled: the replay must take the record's bytes, not the file's.
        if (sourceInJournal) writeFileSync(src, 'damaged!!'.slice(0, 9), { flag: 'r+' });
        if (step >= 1) utimesSync(src, seconds, seconds);
        if (step >= 2) renameSync(src, join(dir, TARGET));
        const store = createFsStorage({ dir });
        try {
          expect(utf8Decode((await store.get(TARGET))!.bytes)).toBe('the chunk');
          const source = await store.get(SOURCE);
          expect(source && utf8Decode(source.bytes)).toBe(putAgain ? 'again' : undefined);
          expect(utf8Decode((await store.get('chunks/ab/other'))!.bytes)).toBe('other');
          await store.flush!();
        } finally {
          await store.close();
        }
        expect(readFileSync(join(dir, TARGET), 'utf8')).toBe('the chunk');
        if (!sourceInJournal) expect(statSync(join(dir, TARGET), { bigint: true }).ino).toBe(ino);
        expect(existsSync(src)).toBe(putAgain);
      }),
      { numRuns: 24 },
    );
  });

  it('a replay of a file moved on again (its first move applied, the second not) brings it to the last target', async () => {
    const dir = await seeded();
    const ino = statSync(join(dir, SOURCE), { bigint: true }).ino;
    const seconds = Math.floor(Date.now() / 1000) + 10;
    const at = (s: number): string => `${BigInt(s) * 1_000_000_000n}.${ino}.9`;
    const last = 'chunks/ab/abc.hidden-2000';
    writeFileSync(
      join(dir, JOURNAL_NAME),
      Buffer.concat([
        encodeRecord(
          [
            ['m', SOURCE, TARGET, at(seconds)],
            ['d', SOURCE],
          ],
          [],
          9,
        ),
        encodeRecord(
          [
            ['m', TARGET, last, at(seconds + 1)],
            ['d', TARGET],
          ],
          [],
          9,
        ),
      ]),
    );
    renameSync(join(dir, SOURCE), join(dir, TARGET));
    const store = createFsStorage({ dir });
    try {
      expect(utf8Decode((await store.get(last))!.bytes)).toBe('the chunk');
      expect(await store.get(TARGET)).toBeUndefined();
      expect(await store.get(SOURCE)).toBeUndefined();
    } finally {
      await store.close();
    }
    expect(statSync(join(dir, last), { bigint: true }).ino).toBe(ino);
  });

  it('a fault at every call from the move to the end of its apply: the bytes stay under the source or the target, never neither, and an acknowledged move ends moved', async () => {
    await faultAtEveryCall(
      seeded,
      async (store, arm) => {
        await store.get(SOURCE);
        arm();
        return moveOf(store)!(SOURCE, TARGET).then(
          (r) => r,
          () => false,
        );
      },
      async (again, acked, fail) => {
        const [source, target] = await Promise.all([again.get(SOURCE), again.get(TARGET)]);
        expect(source ?? target, `fault at call ${fail}`).toBeDefined();
        for (const found of [source, target]) if (found) expect(utf8Decode(found.bytes)).toBe('the chunk');
        if (acked) expect([source, target !== undefined], `fault at call ${fail}`).toEqual([undefined, true]);
      },
    );
  });
});
