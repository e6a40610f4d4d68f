/**
 * The journal lock's lease and fence (DESIGN invariant 7), in one process with two
 * instances: a holder whose commit stalls past its lease (its record's write and its lease
 * renewal held at a gate, as a paused process's would be) loses the lock to another
 * instance, and its late record is refused — it lands in the journal file the breaker
 * replaced, never over the breaker's records (regression: the other instance waited for
 * the stalled holder until its lock wait ran out).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CheckpointError } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { decodeJournal, JOURNAL_NAMES } from '../../../src/storage/fs/journal/index.js';
import { gate, heldAt } from '../../support/rename-gate.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-lease');
const text = (s: string): Uint8Array => utf8Encode(s);
const gates: (() => void)[] = [];
afterEach(() => {
  for (const open of gates.splice(0)) open();
});

describe('fsStorage journal: the lock lease', () => {
  it("a holder stalled past its lease loses the lock; its late commit is refused and nothing of the breaker's is overwritten", async () => {
    const dir = fresh();
    const stall = gate();
    gates.push(stall.open);
    let reached = (): void => undefined;
    const atWrite = new Promise<void>((r) => (reached = r));
    const stalledIo: FsIo = { ...realIo, writeAt: heldAt(stall, realIo.writeAt, () => reached()), futimes: heldAt(stall, realIo.futimes) };
    const timing = { staleAfterMs: 2_000, lockTimeoutMs: 10_000 };
    const a = createFsStorage({ dir, journal: true, ...timing }, { io: stalledIo, journalLingerMs: 60_000 });
    const b = createFsStorage({ dir, journal: true, ...timing });
    try {
      await a.put('runs/a/one', text('a1'));
      stall.close();
      const late = a.put('runs/a/two', text('a2'));
      late.catch(() => undefined);
      await atWrite;
      // B waits one lease (1 s here) at most, breaks the lock and commits.
      await b.put('runs/b/one', text('b1'));
      await b.put('runs/b/two', text('b2'));
      stall.open();
      const err = await late.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CheckpointError);
      expect((err as CheckpointError).details).toMatchObject({ reason: 'journal_lease_lost' });
      expect((err as CheckpointError).message).toMatch(/retry/);
      // B's records are whole in the journal: the late record did not land over them.
      const journaled = [JOURNAL_NAMES[0], JOURNAL_NAMES[1]].flatMap((name) =>
        decodeJournal(new Uint8Array(readFileSync(join(dir, name)))).records.flatMap((r) => r.ops.map((op) => op.key)),
      );
      expect(journaled).toEqual(expect.arrayContaining(['runs/b/one', 'runs/b/two']));
      expect(journaled).not.toContain('runs/a/two');
      await b.put('runs/b/three', text('b3'));
    } finally {
      await b.close();
      await a.close();
    }
    const c = createFsStorage({ dir, journal: true });
    try {
      const read = async (key: string): Promise<string | undefined> => {
        const got = await c.get(key);
        return got ? utf8Decode(got.bytes) : undefined;
      };
      expect(await read('runs/a/one')).toBe('a1');
      expect(await read('runs/b/one')).toBe('b1');
      expect(await read('runs/b/two')).toBe('b2');
      expect(await read('runs/b/three')).toBe('b3');
      expect(await read('runs/a/two')).toBeUndefined();
    } finally {
      await c.close();
    }
  });
});
