/**
 * fsStorage's `moveMany` on the journal: the moves of one call go in one record (renames of the
 * sources' files); a move that cannot be made (its target taken) answers false while the others
 * are made; and a fault at every call from the call to the end of its apply leaves each value
 * under its source or its target, never neither, and all of them moved once acknowledged.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { moveManyOf, moveOf, type KeyMove } from '../../../src/contract/move.js';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import { countingIo } from '../../support/journal-records.js';
import { faultAtEveryCall } from '../../support/fs-faults.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-move-many');
const text = (s: string): Uint8Array => utf8Encode(s);
/** Five keys in three directories, each moved to a hidden name beside it. */
const MOVES: KeyMove[] = ['ab/a1', 'ab/a2', 'cd/c1', 'cd/c2', 'ef/e1'].map((k) => ({ from: `chunks/${k}`, to: `chunks/${k}.hidden-1000` }));
const bytesOf = (key: string): string => `the bytes of ${key}`;

/** A store directory holding every source of MOVES on disk, its journal checkpointed (closed). */
async function seeded(): Promise<string> {
  const dir = fresh();
  const store = createFsStorage({ dir });
  for (const { from } of MOVES) await store.put(from, text(bytesOf(from)));
  await store.close();
  return dir;
}

describe('fsStorage journal: moveMany', () => {
  it('moves every value in one record, each by a rename of its file, durable across a reopen', async () => {
    const dir = await seeded();
    const inodes = MOVES.map((m) => statSync(join(dir, m.from)).ino);
    const counted = countingIo();
    const store = createFsStorage({ dir }, { io: counted.io });
    try {
      const moveMany = moveManyOf(store)!;
      expect(moveMany).toBeTypeOf('function');
      const before = counted.records();
      expect(await moveMany(MOVES)).toEqual(MOVES.map(() => true));
      expect(counted.records() - before).toBe(1);
      await store.flush!();
    } finally {
      await store.close();
    }
    const again = createFsStorage({ dir });
    try {
      for (const [i, m] of MOVES.entries()) {
        expect(await again.get(m.from)).toBeUndefined();
        expect(utf8Decode((await again.get(m.to))!.bytes)).toBe(bytesOf(m.from));
        expect(statSync(join(dir, m.to)).ino, m.to).toBe(inodes[i]);
      }
    } finally {
      await again.close();
    }
  });

  it('answers false for a move whose source is absent or whose target is taken, and makes the others', async () => {
    const dir = await seeded();
    const store = createFsStorage({ dir });
    try {
      await store.put(MOVES[1]!.to, text('taken'));
      await store.delete(MOVES[3]!.from);
      expect(await moveManyOf(store)!(MOVES)).toEqual([true, false, true, false, true]);
      expect(utf8Decode((await store.get(MOVES[1]!.to))!.bytes)).toBe('taken');
      expect(utf8Decode((await store.get(MOVES[1]!.from))!.bytes)).toBe(bytesOf(MOVES[1]!.from));
      for (const i of [0, 2, 4]) {
        expect(await store.get(MOVES[i]!.from)).toBeUndefined();
        expect(utf8Decode((await store.get(MOVES[i]!.to))!.bytes)).toBe(bytesOf(MOVES[i]!.from));
      }
    } finally {
      await store.close();
    }
  });

  it('refuses a key named by two moves, and is absent where move is (direct mode, memory)', async () => {
    const dir = await seeded();
    const store = createFsStorage({ dir });
    const direct = createFsStorage({ dir: fresh(), journal: false });
    try {
      const moveMany = moveManyOf(store)!;
      const refused = { reasonCode: 'checkpoint_config_invalid' };
      await expect(moveMany([MOVES[0]!, { from: MOVES[0]!.to, to: 'chunks/ab/a1.hidden-2000' }])).rejects.toMatchObject(refused);
      await expect(moveMany([{ from: 'chunks/ab/a1', to: 'chunks/ab/a1' }])).rejects.toMatchObject(refused);
      expect(await moveMany([])).toEqual([]);
      expect(moveManyOf(direct)).toBeUndefined();
      expect(moveOf(memoryStorage())).toBeTypeOf('function');
      expect(moveManyOf(memoryStorage())).toBeUndefined();
    } finally {
      await Promise.all([store.close(), direct.close()]);
    }
  });

  it('a fault at every call from the moveMany to the end of its apply: each value stays under its source or its target, never neither, and an acknowledged moveMany ends with all of them moved', async () => {
    await faultAtEveryCall(
      seeded,
      async (store, arm) => {
        for (const { from } of MOVES) await store.get(from);
        arm();
        return moveManyOf(store)!(MOVES).then(
          (r) => r.every(Boolean),
          () => false,
        );
      },
      async (again, acked, fail) => {
        for (const m of MOVES) {
          const [source, target] = await Promise.all([again.get(m.from), again.get(m.to)]);
          expect(source ?? target, `${m.from}, fault at call ${fail}`).toBeDefined();
          for (const found of [source, target]) if (found) expect(utf8Decode(found.bytes)).toBe(bytesOf(m.from));
          if (acked) expect([source, target !== undefined], `${m.from}, fault at call ${fail}`).toEqual([undefined, true]);
        }
      },
    );
  });
});
