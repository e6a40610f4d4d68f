import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { fdClose } from './fd.js';
import { openChild, type Dir, type RootDir } from './dir.js';
import { errnoOf } from './io.js';
import { inspectLock, keyClaimStaleMs, leftBehind, tempsByInode, type LockTiming } from './lock.js';
import { JOURNAL_LOCK } from './journal/files.js';
import { breakJournalLock } from './journal/replay-owed.js';
import { classifyInternal } from './names.js';
import { removeStale } from './take-over.js';

/** What the open-time sweep removed. */
export interface SweepResult {
  /** Temp files, claims of locks and leftover second links of processes that are gone or too old. */
  removedTempFiles: number;
  /** Stale lock files. */
  removedLocks: number;
}

/**
 * Walks the store (through directory descriptors, never through symlinks) and removes the
 * internal files crashed writers left behind: temp files and locks whose owner process is
 * gone or that are older than the stale bound, and claims of locks older than the stale bound
 * (a claimer killed: its claim names an inode the lock no longer holds, and nobody acts on a
 * claim that old). Files of live processes stay: another process may be mid-write. A stale lock
 * is removed under a claim of its inode (take-over.ts), so a live lock that replaced it after
 * it was looked at stays.
 */
export async function sweepInternalFiles(root: RootDir, timing: LockTiming): Promise<SweepResult> {
  const result: SweepResult = { removedTempFiles: 0, removedLocks: 0 };

  const walk = async (dir: Dir): Promise<void> => {
    let entries;
    try {
      entries = await fsp.readdir(dir.prefix, { withFileTypes: true });
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw err;
    }
    let temps: Awaited<ReturnType<typeof tempsByInode>> | undefined;
    for (const entry of entries) {
      const path = dir.at(entry.name);
      const internal = classifyInternal(entry.name);
      if (internal?.kind === 'lock') {
        temps ??= await tempsByInode(dir.prefix);
        if (await removeIfStale(root, dir, entry.name, timing, temps)) result.removedLocks++;
      } else if (internal?.kind === 'claim') {
        if (removeOldClaim(path, timing)) result.removedTempFiles++;
      } else if (leftBehind(entry.name, timing)) {
        try {
          await fsp.unlink(path);
          result.removedTempFiles++;
        } catch (err) {
          if (errnoOf(err) !== 'ENOENT') throw err;
        }
      } else if (!internal && entry.isDirectory()) {
        const child = await openChild(root, dir, entry.name);
        if (!child) continue;
        try {
          await walk(child);
        } finally {
          await fdClose(child.fd).catch(() => undefined);
        }
      }
    }
  };
  await walk(root);
  return result;
}

/** Removes the lock `name` of `dir` if it is stale (`temps`: the directory's temp files, listed once); true when it did. */
async function removeIfStale(
  root: RootDir,
  dir: Dir,
  name: string,
  timing: LockTiming,
  temps: Awaited<ReturnType<typeof tempsByInode>>,
): Promise<boolean> {
  const path = dir.at(name);
  const state = await inspectLock(path, dir.prefix, timing, temps);
  if (state === 'gone' || !state.stale) return false;
  // The journal's lock: its holder's records may be unapplied, and this process may not be the next to take it.
  if (dir === root && name === JOURNAL_LOCK) return breakJournalLock(root, state.ino, false, timing);
  // Looked at again under the claim with a fresh listing: a temp file made since may hold it.
  return removeStale(path, state.ino, { inspect: () => inspectLock(path, dir.prefix, timing), claimStaleMs: keyClaimStaleMs(timing) });
}

/**
 * Removes a claim older than the stale bound (by its file's time, as claimers judge it), looked
 * at and removed in adjacent synchronous calls: a claim is made at a free name only, so a young
 * one is removed only if another process removed the old one and made it in between.
 */
function removeOldClaim(path: string, timing: LockTiming): boolean {
  try {
    const st = fs.lstatSync(path, { throwIfNoEntry: false });
    if (!st || Date.now() - st.mtimeMs <= timing.staleAfterMs) return false;
    fs.unlinkSync(path);
    return true;
  } catch {
    return false;
  }
}
