/**
 * How long one hold of the journal lock lasts under continuous commits with nobody waiting:
 * until its token is half the stale bound old (what others judge the lock by), not a fixed
 * second. Ending a hold drains every apply and checkpoints a journal file on the commit path
 * that pays for it, and the next hold reads where the journal ends before its record.
 */
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from 'savepoint';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { systemClock } from '../../../src/contract/clock.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-hold-age');

const MAGIC = [0x53, 0x50, 0x4a, 0x32]; // a journal record starts with "SPJ2"
const isRecord = (bytes: unknown): boolean => bytes instanceof Uint8Array && bytes.length > 20 && MAGIC.every((m, i) => bytes[i] === m);

/** The real calls, logging `<name>+` when issued (a journal record's write is `record`), and how many are in flight. */
function loggingIo(): { io: FsIo; log: string[]; inFlight(): number } {
  const log: string[] = [];
  let inFlight = 0;
  const io = Object.fromEntries(
    Object.entries(realIo).map(([name, fn]) => [
      name,
      (...args: unknown[]): Promise<unknown> => {
        log.push(`${name === 'writeAt' && isRecord(args[1]) ? 'record' : name}+`);
        inFlight++;
        const p = (fn as (...a: unknown[]) => Promise<unknown>)(...args);
        const settle = (): void => void inFlight--;
        p.then(settle, settle);
        return p;
      },
    ]),
  ) as unknown as FsIo;
  return { io, log, inFlight: () => inFlight };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const checkpointOps = (i: number, bytes: Uint8Array): BatchOperation[] => [
  { type: 'put', key: `checkpoints/r/history/cp_${i}.json`, bytes, ifAbsent: true },
  { type: 'put', key: 'checkpoints/r/latest.json', bytes },
  { type: 'put', key: 'checkpoints/r/index.json', bytes },
];

describe('fsStorage journal: one hold of the lock with nobody waiting', () => {
  it('outlasts a quarter of the stale bound without a call before the record, and ends once its token is half of it old', async () => {
    const rec = loggingIo();
    const staleAfterMs = 2_000;
    // A linger far past the test: only the token's age can end the hold.
    const store = createFsStorage({ dir: fresh(), journal: true, staleAfterMs }, { io: rec.io, journalLingerMs: 60_000 });
    const bytes = utf8Encode(JSON.stringify({ note: 'x'.repeat(1000) }));
    /** The calls the batch made before its record. */
    const callsBefore = async (i: number): Promise<string[]> => {
      while (rec.inFlight() > 0) await sleep(1);
      rec.log.length = 0;
      await store.batch!(checkpointOps(i, bytes));
      const start = rec.log.indexOf('record+');
      expect(start).toBeGreaterThanOrEqual(0);
      return rec.log.slice(0, start);
    };
    try {
      const began = Date.now();
      await store.batch!(checkpointOps(0, bytes));
      await callsBefore(1);
      // Past a quarter of the stale bound (where a hold used to end, letting the lock go and taking it again on this path).
      await sleep(staleAfterMs / 4 + 150 - (Date.now() - began));
      const inside = await callsBefore(2);
      // Inside half of it (the token was made with the first commit, before `began`): the same hold, whose
      // record goes where it knows the journal ends. (The temp pool may renew its aged files meanwhile.)
      if (Date.now() - began < staleAfterMs / 2 - 100) expect(inside).not.toContain('read+');
      // Past half of it: the hold ended and a new one reads where the journal ends before its record.
      await sleep(staleAfterMs / 2 + 150 - (Date.now() - began));
      expect(await callsBefore(3)).toContain('read+');
    } finally {
      await store.close();
    }
  });

  it('ends when its lease ran out unrenewed (no timer ran for longer than the lease): the next commit takes the lock afresh, not refused', async () => {
    // Tokens never age by this clock: only the lease can end the hold. The lease is half the stale bound: 200 ms.
    const frozenAt = Date.now();
    const store = createFsStorage(
      { dir: fresh(), journal: true, staleAfterMs: 400, clock: { ...systemClock, now: () => frozenAt } },
      { journalLingerMs: 60_000 },
    );
    const bytes = utf8Encode('{}');
    try {
      await store.batch!(checkpointOps(0, bytes));
      await store.batch!(checkpointOps(1, bytes));
      // Code that never yields to the event loop's timers for longer than the lease: its renewal cannot run.
      const until = Date.now() + 300;
      while (Date.now() < until);
      // Regression: the hold went on, and the commit was refused (`journal_lease_lost`).
      const outcomes = await store.batch!(checkpointOps(2, bytes));
      expect(outcomes.map((o) => o.type)).toEqual(['put', 'put', 'put']);
      expect(await store.get('checkpoints/r/history/cp_2.json')).not.toBeNull();
    } finally {
      await store.close();
    }
  });
});
