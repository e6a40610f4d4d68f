import fsp from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { sleep, type Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import { fsLink, fsRename } from './fd.js';
import { errnoOf } from './io.js';
import { INTERNAL_MARK, deadName, newOwner, ownerGone, parseOwner, type Owner } from './names.js';

/*
 * Per-key locks. The lock of a key is a file named after it in the key's directory, and
 * taking it is link(2) of the writer's own temp file to that name: atomic, and it fails
 * with EEXIST while anyone holds the lock, in this process or another. Releasing is
 * unlink(2). (A delete, which has no temp file, makes an empty one to lock with.)
 *
 * Why a hard link of the temp file: the lock is taken and released on every write, so it
 * must cost next to nothing. A symlink or an O_EXCL file allocates and frees an inode each
 * time, which measurably lengthened every fsync (~1 ms per put on ext4); linking the temp
 * file only touches a directory block and an inode the write dirties anyway.
 *
 * Who holds a lock: the temp file (`.sp\tmp-<host>-<pid>-<time>-<id>`) with the same inode
 * number, found by listing the directory — only when the lock is contended. A lock is
 * stale when that owner's process is gone (same host), when it is older than
 * `staleAfterMs`, or when no temp file has its inode any more: then its holder has
 * committed (renamed the temp file over the key; only the directory fsync is left) or died
 * and was swept.
 *
 * Breaking a stale lock renames it to a unique name first and then checks what it took:
 * if a racing process had replaced the stale lock with a live one meanwhile, that one is
 * linked back. A holder whose lock has aged past half the stale bound re-checks it before
 * committing (`assertHeld`), so a lock broken from under a stalled holder makes the holder
 * abort instead of writing. Release renames the lock away to a unique name first and then
 * checks what it took, exactly as breaking does, so it cannot remove a lock another process
 * took in between (a committed holder's lock looks stale to others: its temp name is gone).
 *
 * Every call is asynchronous (no file-system call blocks the event loop), and the paths may
 * be `/proc/<pid>/fd/<dir fd>/<name>` names (see dir.ts): `dir` is a directory path prefix.
 */

/** Timing of per-key locks. */
export interface LockTiming {
  readonly clock: Clock;
  /** A lock older than this is stale even if its process still runs. */
  readonly staleAfterMs: number;
  /** How long to wait for a live holder before giving up. */
  readonly lockTimeoutMs: number;
}

/** The temp file a lock is a link to. */
export interface LockToken {
  /** Absolute path of the temp file. */
  readonly path: string;
  readonly ino: bigint;
  /** Owner from the temp file's name. */
  readonly owner: Owner;
}

/** A lock this instance holds. */
export interface HeldLock {
  /** Absolute path of the lock file. */
  readonly path: string;
  /** Directory holding it (for broken-lock names). */
  readonly dir: string;
  readonly token: LockToken;
  /** True when taking it meant breaking a stale lock: its holder died (or stalled) holding it. */
  readonly brokeStale?: boolean;
}

const TMP_PREFIX = `${INTERNAL_MARK}tmp-`;

/** What holds the lock at `path`: gone, or which inode and whether it is stale. */
export type LockState = 'gone' | { readonly ino: bigint; readonly stale: boolean; readonly pid?: number };

/** lstat that resolves `undefined` for a missing name. */
export async function lstatIfAny(path: string): Promise<BigIntStats | undefined> {
  try {
    return await fsp.lstat(path, { bigint: true });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Temp files of a directory by inode number (the candidates for a lock's holder). */
export async function tempsByInode(dir: string): Promise<Map<bigint, Owner | undefined>> {
  const out = new Map<bigint, Owner | undefined>();
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return out;
  }
  const temps = names.filter((name) => name.startsWith(TMP_PREFIX));
  const stats = await Promise.all(temps.map((name) => lstatIfAny(`${dir}/${name}`).catch(() => undefined)));
  temps.forEach((name, i) => {
    const st = stats[i];
    if (st?.isFile()) out.set(st.ino, parseOwner(name.slice(TMP_PREFIX.length)));
  });
  return out;
}

/** Inspects the lock at `path` in `dir`; `temps` is a listing from {@link tempsByInode} to reuse. */
export async function inspectLock(
  path: string,
  dir: string,
  timing: LockTiming,
  temps?: Map<bigint, Owner | undefined>,
): Promise<LockState> {
  const st = await lstatIfAny(path);
  if (!st) return 'gone';
  if (!st.isFile()) return { ino: st.ino, stale: true }; // not a lock fsStorage makes
  // The lock exists, so its temp file existed before it: a listing made now shows it, unless
  // the holder has committed since (or died and was swept).
  const owner = (temps ?? (await tempsByInode(dir))).get(st.ino);
  if (!owner) return { ino: st.ino, stale: true };
  return { ino: st.ino, stale: ownerGone(owner, timing.clock.now(), timing.staleAfterMs), pid: owner.pid };
}

/**
 * Removes the stale lock at `path` (inode `staleIno`) without removing a live lock that
 * replaced it meanwhile. Resolves true if it removed one.
 */
export async function breakLock(path: string, dir: string, staleIno: bigint, timing: LockTiming): Promise<boolean> {
  const dead = `${dir}/${deadName(newOwner(timing.clock.now()))}`;
  try {
    await fsRename(path, dead);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false; // someone else broke or released it
    throw err;
  }
  const grabbed = await lstatIfAny(dead).catch(() => undefined);
  const restore = grabbed !== undefined && grabbed.ino !== staleIno;
  // We took a fresh lock by mistake: link it back unless the name is taken again already.
  if (restore) await fsLink(dead, path).catch(() => undefined);
  await fsp.unlink(dead).catch(() => undefined);
  return !restore;
}

/**
 * Takes the lock file at `path` for `key` with `token` (a temp file in the same
 * directory `dir`), waiting (with capped exponential backoff on `timing.clock`) while a
 * live process holds it and breaking it when it is stale. Rejects with
 * `checkpoint_atomic_write_failed` after `lockTimeoutMs`; ENOENT (the directory vanished)
 * passes through for a retry.
 */
export async function acquireLock(path: string, dir: string, key: string, token: LockToken, timing: LockTiming): Promise<HeldLock> {
  const start = timing.clock.now();
  let delay = 1;
  let brokeStale = false;
  for (;;) {
    try {
      await fsLink(token.path, path);
      return brokeStale ? { path, dir, token, brokeStale } : { path, dir, token };
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
    const state = await inspectLock(path, dir, timing);
    if (state === 'gone') continue;
    if (state.stale) {
      if (await breakLock(path, dir, state.ino, timing)) brokeStale = true;
      continue;
    }
    if (timing.clock.now() - start >= timing.lockTimeoutMs) {
      throw new CheckpointError(
        'checkpoint_atomic_write_failed',
        `lock of ${key} is held by a live process (pid ${state.pid ?? '?'}) for over ${timing.lockTimeoutMs} ms`,
        {
          details: { key, reason: 'lock_timeout', holderPid: state.pid ?? -1 },
        },
      );
    }
    await sleep(timing.clock, delay * (0.5 + Math.random()));
    delay = Math.min(delay * 2, 50);
  }
}

/**
 * Before committing: a lock younger than half the stale bound cannot have been broken
 * (only gone or stale holders are, and our temp file still exists), so this costs no call
 * on the normal path.
 */
export async function assertHeld(lock: HeldLock, key: string, timing: LockTiming): Promise<void> {
  if (timing.clock.now() - lock.token.owner.atMs <= timing.staleAfterMs / 2) return;
  if ((await lstatIfAny(lock.path).catch(() => undefined))?.ino !== lock.token.ino) {
    throw new CheckpointError(
      'checkpoint_atomic_write_failed',
      `lock of ${key} was broken while held (the write stalled past the stale bound); nothing was written`,
      {
        details: { key, reason: 'lock_lost' },
      },
    );
  }
}

/**
 * Releases a held lock, never someone else's: once our temp file is gone (committed), other
 * processes may judge the lock stale, break it and take their own; checking the name and
 * then unlinking it could remove theirs. So the lock is renamed away first (atomic: we get
 * exactly what was there) and a lock that turns out not to be ours is put back.
 */
export async function releaseLock(lock: HeldLock, timing: LockTiming): Promise<void> {
  // breakLock removes only the inode it is given (ours) and puts any other back.
  await breakLock(lock.path, lock.dir, lock.token.ino, timing).catch(() => undefined);
}
