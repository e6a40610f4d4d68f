import fsp from 'node:fs/promises';
import { sleep, type Clock } from '../../model/clock.js';
import { CheckpointError } from '../../model/errors.js';
import { errnoOf } from './io.js';
import { deadName, newOwner, ownerGone, parseOwner, type Owner } from './names.js';

/** Timing of per-key lock files. */
export interface LockTiming {
  readonly clock: Clock;
  /** A lock older than this is stale even if its process still runs. */
  readonly staleAfterMs: number;
  /** How long to wait for a live holder before giving up. */
  readonly lockTimeoutMs: number;
}

/** A lock this process holds. */
export interface HeldLock {
  /** Absolute path of the lock file. */
  readonly path: string;
  /** Directory holding it (for broken-lock names). */
  readonly dir: string;
  readonly owner: Owner;
}

/*
 * A lock is a symbolic link whose target is the holder's owner tag (host, pid, time,
 * random). symlink(2) creates it atomically or fails with EEXIST, and readlink(2) tells
 * who holds it in one call; the link is never followed. A lock is stale when its holder
 * process is gone (same host) or it is older than `staleAfterMs`.
 *
 * Breaking a stale lock renames it to a unique name first and then checks what it took:
 * if a racing process had already replaced the stale lock with a live one, that one is
 * put back (same tag, so its holder's checks still pass). A holder whose lock has aged
 * past half the stale bound re-reads it before committing (see `assertHeld`), so a lock
 * broken from under a stalled holder makes that holder abort instead of writing.
 */

async function readTag(path: string): Promise<string | undefined | 'gone'> {
  try {
    return await fsp.readlink(path);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT') return 'gone';
    if (code === 'EINVAL') return undefined; // not a symlink: not a lock we understand
    throw err;
  }
}

/** Removes a lock that was judged stale, without removing a live lock that replaced it meanwhile. Resolves true if it removed one. */
export async function breakLock(path: string, dir: string, timing: LockTiming): Promise<boolean> {
  const dead = `${dir}/${deadName(newOwner(timing.clock.now()))}`;
  try {
    await fsp.rename(path, dead);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false; // someone else broke or released it
    throw err;
  }
  const grabbed = await readTag(dead);
  const owner = typeof grabbed === 'string' ? parseOwner(grabbed) : undefined;
  const live = owner !== undefined && !ownerGone(owner, timing.clock.now(), timing.staleAfterMs);
  // We took a fresh lock by mistake: restore it unless the name is taken again already.
  if (live) await fsp.symlink(owner.tag, path).catch(() => undefined);
  await fsp.unlink(dead).catch(() => undefined);
  return !live;
}

/**
 * Takes the lock file at `path` for `key`, waiting (with capped exponential backoff on
 * `timing.clock`) while a live process holds it and breaking it when it is stale.
 * Rejects with `checkpoint_atomic_write_failed` after `lockTimeoutMs`; ENOENT (the
 * directory vanished) passes through for the caller to retry.
 */
export async function acquireLock(path: string, dir: string, key: string, timing: LockTiming): Promise<HeldLock> {
  const start = timing.clock.now();
  let delay = 1;
  for (;;) {
    const owner = newOwner(timing.clock.now());
    try {
      await fsp.symlink(owner.tag, path);
      return { path, dir, owner };
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
    const tag = await readTag(path);
    if (tag === 'gone') continue;
    const holder = tag === undefined ? undefined : parseOwner(tag);
    if (!holder || ownerGone(holder, timing.clock.now(), timing.staleAfterMs)) {
      await breakLock(path, dir, timing);
      continue;
    }
    if (timing.clock.now() - start >= timing.lockTimeoutMs) {
      throw new CheckpointError('checkpoint_atomic_write_failed', `lock of ${key} is held by a live process (pid ${holder.pid}) for over ${timing.lockTimeoutMs} ms`, {
        details: { key, reason: 'lock_timeout', holderPid: holder.pid },
      });
    }
    await sleep(timing.clock, delay * (0.5 + Math.random()));
    delay = Math.min(delay * 2, 50);
  }
}

function agedHalfway(lock: HeldLock, timing: LockTiming): boolean {
  return timing.clock.now() - lock.owner.atMs > timing.staleAfterMs / 2;
}

/**
 * Before committing: a lock younger than half the stale bound cannot have been broken
 * (only dead or stale holders are), so this costs no call on the normal path.
 */
export async function assertHeld(lock: HeldLock, key: string, timing: LockTiming): Promise<void> {
  if (!agedHalfway(lock, timing)) return;
  if ((await readTag(lock.path)) !== lock.owner.tag) {
    throw new CheckpointError('checkpoint_atomic_write_failed', `lock of ${key} was broken while held (the write stalled past the stale bound); nothing was written`, {
      details: { key, reason: 'lock_lost' },
    });
  }
}

/** Releases a held lock (never someone else's). */
export async function releaseLock(lock: HeldLock, timing: LockTiming): Promise<void> {
  if (agedHalfway(lock, timing) && (await readTag(lock.path).catch(() => undefined)) !== lock.owner.tag) return;
  await fsp.unlink(lock.path).catch(() => undefined);
}
