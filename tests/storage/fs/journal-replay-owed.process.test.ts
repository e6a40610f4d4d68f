/**
 * A holder of the journal lock SIGKILLed with records acknowledged and not applied: the
 * process that breaks its lock is not always the one that takes it next (another links it
 * first, or the breaker dies before its link). Whoever takes the lock next must replay the
 * journal first, and reads meanwhile must see the acknowledged records (regression: a process
 * that took the lock another had broken checked its conditions against files missing the dead
 * holder's records — two LangGraph replicas stored one sequence twice — and the next
 * checkpoint of the journal dropped those records).
 */
import { spawn } from 'node:child_process';
import { lstatSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { fsStorage } from 'savepoint/fs';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { openRoot } from '../../../src/storage/fs/dir.js';
import { fdClose } from '../../../src/storage/fs/fd.js';
import { breakJournalLock } from '../../../src/storage/fs/journal/replay-owed.js';
import { sweepInternalFiles } from '../../../src/storage/fs/sweep.js';
import { systemClock } from '../../../src/contract/clock.js';
import { bundledChildPerFile } from '../../support/bundle-child.js';
import { rejection } from '../../support/rejection.js';
import { scratchFolder } from '../../support/scratch.js';

const bundled = bundledChildPerFile(join(import.meta.dirname, 'journal-owed-child.ts'), 'savepoint-fs-owed-');
const root = scratchFolder('fs-owed-store');

const LOCK = '.sp\\lock-\\journal';
const timing = { clock: systemClock, staleAfterMs: 60_000, lockTimeoutMs: 10_000 };

/** Runs the child on `dir` until its puts are acknowledged, then SIGKILLs it (it holds the lock, its records unapplied). */
async function holderDiesAfter(dir: string, puts: readonly string[]): Promise<void> {
  const child = spawn(process.execPath, [bundled.bundle, dir, ...puts], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for await (const line of createInterface({ input: child.stdout })) if (line === 'acked') break;
  expect(lstatSync(join(dir, LOCK)).isFile()).toBe(true);
  child.kill('SIGKILL');
  await exited;
}

/** How the dead holder's lock is broken by a process that then does not take it (it dies, or loses the link to another). */
const BREAKERS = {
  'a writer waiting for the lock': async (dir: string): Promise<void> => {
    const opened = await openRoot(dir);
    try {
      expect(await breakJournalLock(opened, lstatSync(join(dir, LOCK), { bigint: true }).ino, false, timing)).toBe(true);
    } finally {
      await fdClose(opened.fd);
    }
  },
  'a process opening the store (its sweep)': async (dir: string): Promise<void> => {
    const opened = await openRoot(dir);
    try {
      expect((await sweepInternalFiles(opened, timing)).removedLocks).toBe(1);
    } finally {
      await fdClose(opened.fd);
    }
  },
};

describe('fs journal: a dead holder whose lock another process broke', () => {
  for (const [name, breakLock] of Object.entries(BREAKERS)) {
    it(`broken by ${name}: the next holder replays first, and reads see the acknowledged records meanwhile`, async () => {
      const dir = mkdtempSync(join(root, 'store-'));
      // Open before the holder dies, as a replica that serves the thread next: its open-time replay is past.
      const next = fsStorage({ dir });
      try {
        await next.put('other/a.json', utf8Encode('{}'));
        await next.flush!();
        await new Promise((resolve) => setTimeout(resolve, 100)); // its lock lingers 20 ms
        await holderDiesAfter(dir, ['run/head.json={"sequence":1}', 'run/history/1.json={"n":1}']);
        await breakLock(dir);

        expect(lstatSync(join(dir, LOCK), { throwIfNoEntry: false })).toBeUndefined();
        // Read before anyone holds the lock: the acknowledged record, not the files.
        expect(utf8Decode((await next.get('run/history/1.json'))!.bytes)).toBe('{"n":1}');
        // A conditional write checks against the acknowledged state.
        expect((await rejection(next.put('run/head.json', utf8Encode('{"sequence":1}'), { ifAbsent: true }))).reasonCode).toBe(
          'checkpoint_conflict',
        );
        await next.put('run/head.json', utf8Encode('{"sequence":2}'));
        await next.flush!();
      } finally {
        await next.close();
      }
      // Nothing acknowledged was dropped by the journal's checkpoint.
      const reopened = fsStorage({ dir });
      try {
        expect(utf8Decode((await reopened.get('run/history/1.json'))!.bytes)).toBe('{"n":1}');
        expect(utf8Decode((await reopened.get('run/head.json'))!.bytes)).toBe('{"sequence":2}');
      } finally {
        await reopened.close();
      }
    }, 60_000);
  }
});
