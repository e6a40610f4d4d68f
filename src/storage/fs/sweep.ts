import fsp from 'node:fs/promises';
import { fdClose } from './fd.js';
import { openChild, type Dir, type RootDir } from './dir.js';
import { errnoOf } from './io.js';
import { breakLock, inspectLock, leftBehind, tempsByInode, type LockTiming } from './lock.js';
import { JOURNAL_LOCK } from './journal/files.js';
import { breakJournalLock } from './journal/replay-owed.js';
import { classifyInternal } from './names.js';

/** What the open-time sweep removed. */
export interface SweepResult {
  /** Temp files and half-removed broken locks of processes that are gone or too old. */
  removedTempFiles: number;
  /** Stale lock files. */
  removedLocks: number;
}

/**
 * Walks the store (through directory descriptors, never through symlinks) and removes the
 * internal files crashed writers left behind: temp files and locks whose owner process is
 * gone or that are older than the stale bound. Files of live processes stay: another
 * process may be mid-write.
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
        const state = await inspectLock(path, dir.prefix, timing, temps);
        if (state === 'gone' || !state.stale) continue;
        // The journal's lock: its holder's records may be unapplied, and this process may not be the next to take it.
        const broken =
          dir === root && entry.name === JOURNAL_LOCK
            ? await breakJournalLock(root, state.ino, false, timing)
            : await breakLock(path, dir.prefix, state.ino, timing);
        if (broken) result.removedLocks++;
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
