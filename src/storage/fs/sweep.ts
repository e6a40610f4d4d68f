import fsp from 'node:fs/promises';
import { errnoOf } from './io.js';
import { breakLock, type LockTiming } from './lock.js';
import { classifyInternal, ownerGone, parseOwner } from './names.js';

/** What the open-time sweep removed. */
export interface SweepResult {
  /** Temp files (and half-removed broken locks) of processes that are gone or too old. */
  removedTempFiles: number;
  /** Stale lock files. */
  removedLocks: number;
}

async function lockIsStale(path: string, timing: LockTiming): Promise<boolean> {
  let tag: string;
  try {
    tag = await fsp.readlink(path);
  } catch (err) {
    // ENOENT: released meanwhile. EINVAL: not a symlink, so not a lock anyone can hold.
    return errnoOf(err) === 'EINVAL';
  }
  const owner = parseOwner(tag);
  return !owner || ownerGone(owner, timing.clock.now(), timing.staleAfterMs);
}

/**
 * Walks the store (never through symlinks) and removes the internal files a crashed
 * writer left behind: temp files and locks whose owner process is gone or that are older
 * than the stale bound. Files of live processes stay: another process may be mid-write.
 */
export async function sweepInternalFiles(root: string, timing: LockTiming): Promise<SweepResult> {
  const result: SweepResult = { removedTempFiles: 0, removedLocks: 0 };
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw err;
    }
    for (const entry of entries) {
      const path = `${dir}/${entry.name}`;
      const internal = classifyInternal(entry.name);
      if (internal?.kind === 'lock') {
        if ((await lockIsStale(path, timing)) && (await breakLock(path, dir, timing))) result.removedLocks++;
      } else if (internal) {
        if (internal.owner && ownerGone(internal.owner, timing.clock.now(), timing.staleAfterMs)) {
          try {
            await fsp.unlink(path);
            result.removedTempFiles++;
          } catch (err) {
            if (errnoOf(err) !== 'ENOENT') throw err;
          }
        }
      } else if (entry.isDirectory()) {
        await walk(path);
      }
    }
  };
  await walk(root);
  return result;
}
