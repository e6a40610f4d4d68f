import { constants } from 'node:fs';
import fsp from 'node:fs/promises';
import type { RootDir } from '../dir.js';
import { errnoOf } from '../io.js';
import { inspectLock, lstatIfAny, type LockTiming } from '../lock.js';
import { INTERNAL_MARK } from '../names.js';
import { removeStale } from '../take-over.js';
import { JOURNAL_LOCK } from './files.js';
import { journalClaimStaleMs, journalLeaseMs } from './lease.js';
import type { JournalState } from './state.js';

/*
 * A replay owed: the journal lock of a holder that died (or whose lease ran out) is taken over
 * by a writer waiting for it, or removed by a process opening the store (its sweep), and that
 * holder's records may not be applied. The breaker is not always the next holder: the sweep
 * takes no lock (another process may link it first), and a breaker may die between its break
 * and its replay. So the debt is written down before the lock goes: this file, in the store's root.
 * Whoever takes the lock and finds it replays the journal first, and removes it only once the
 * replay is done (under a lease that surely runs, so no later break's file is removed); reads
 * that find no lock but this file read the journal's records, as when another process holds it.
 */

/** The file that says a replay is owed; not empty when a lease was broken (the holder may still be alive: the journal files are replaced). */
export const JOURNAL_REPLAY_OWED = `${INTERNAL_MARK}journal-replay`;

const { O_WRONLY, O_CREAT, O_NOFOLLOW } = constants;

/** Writes the debt down (idempotent; `byLease`: the holder may be alive). */
export async function oweReplay(root: RootDir, byLease: boolean): Promise<void> {
  const handle = await fsp.open(root.at(JOURNAL_REPLAY_OWED), O_WRONLY | O_CREAT | O_NOFOLLOW, 0o644);
  try {
    if (byLease) await handle.write(Uint8Array.of(0x4c), 0, 1, 0);
  } finally {
    await handle.close();
  }
}

/**
 * Removes the stale journal lock (inode `staleIno`, judged by its holder's temp file as a key's
 * lock is) without taking it, under a claim of its inode (../take-over.ts), the replay owed
 * written down first; true when it did.
 */
export function breakJournalLock(root: RootDir, staleIno: bigint, byLease: boolean, timing: LockTiming): Promise<boolean> {
  const path = root.at(JOURNAL_LOCK);
  return removeStale(path, staleIno, {
    inspect: () => inspectLock(path, root.prefix, timing),
    beforeBreak: () => oweReplay(root, byLease),
    claimStaleMs: journalClaimStaleMs(journalLeaseMs(timing)),
  });
}

/** Whether a replay is owed: undefined when not, else whether a lease was broken. */
export async function replayOwed(s: JournalState): Promise<{ readonly byLease: boolean } | undefined> {
  const st = await lstatIfAny(s.root.at(JOURNAL_REPLAY_OWED));
  return st && { byLease: st.size > 0n };
}

/** Removes the debt once a replay is done. */
export async function settleReplay(s: JournalState): Promise<void> {
  await s.io.unlink(s.root.at(JOURNAL_REPLAY_OWED)).catch((err: unknown) => {
    if (errnoOf(err) !== 'ENOENT') throw err;
  });
}
