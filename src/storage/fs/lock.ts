import fsp from 'node:fs/promises';
import { constants, type BigIntStats } from 'node:fs';
import { sleep, type Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import { fsLink, fsRename, type FsIo } from './fd.js';
import { errnoOf } from './io.js';
import { INTERNAL_MARK, classifyInternal, deadName, newOwner, ownerGone, parseOwner, tempName, type Owner } from './names.js';

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
 * Breaking a stale lock (`breakLock`) renames it to a unique name first and then checks what
 * it took: if a racing process had replaced the stale lock with a live one meanwhile, that one
 * is linked back. This is not safe against three processes: while the live lock is away its
 * name is free, and a third process that links there holds the lock too (and the link back
 * fails: two holders). A holder whose lock has aged past half the stale bound re-checks it
 * before committing (`assertHeld`), so a lock broken from under a stalled holder makes the
 * holder abort instead of writing — not a holder whose lock was taken by mistake a moment ago.
 * Release renames the lock away to a unique name first and then checks what it took, exactly
 * as breaking does, so it does not remove a lock another process took in between (a committed
 * holder's lock looks stale to others: its temp name is gone), with the same free moment.
 * For a per-key lock that needs three writers of one key meeting at a stale lock within a few
 * system calls. The packed store's lock, which every writer of a directory shares, is taken
 * over without that moment (take-over.ts). The journal lock is still broken this way, by a
 * waiter (queue.ts) and by the open-time sweep (sweep.ts, `breakJournalLock`): its ticket queue
 * narrows the window, since among waiters only the first in ticket order links or breaks, but
 * does not close it: a process that saw no contention links without a ticket, and the sweep
 * breaks without one.
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

/** A lock's holder as a waiter sees it: its inode, whether it may be broken, and its pid when known. */
export interface Holder {
  readonly ino: bigint;
  readonly stale: boolean;
  readonly pid?: number;
}

/** What holds the lock at `path`: gone, or which inode and whether it is stale. */
export type LockState = 'gone' | Holder;

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

/** How a lock is waited for: what a waiter sees of its holder, what it does before a break, when it gives up. */
export interface LockWaiting<H extends Holder> {
  readonly inspect: () => Promise<'gone' | H>;
  /** Runs before a stale lock is broken (the packed store writes down the seal it then owes). */
  readonly beforeBreak?: () => Promise<void>;
  /** The refusal of a wait that ran out after `waitedMs`. */
  readonly timedOut: (holder: H, waitedMs: number) => CheckpointError;
  /** The backoff's cap (ms); `pauseMs` shortens a pause (before jitter) given the holder. */
  readonly maxDelayMs: number;
  readonly pauseMs?: (delay: number, holder: H) => number;
  /** A lease of the lock, counted from just before each link and dropped when the link fails. */
  readonly lease?: { leaseFrom: number | undefined };
  /**
   * Takes a stale lock over in place of breaking it (see take-over.ts, which runs its own
   * `beforeBreak`); true when it did, false when another waiter is taking it over or it changed
   * (then it is waited for as a live one).
   */
  readonly takeOver?: (holder: H) => Promise<boolean>;
}

/** One link of `token` as the lock at `path`; false when someone holds it. */
async function tryLink(token: LockToken, path: string, lease: { leaseFrom: number | undefined } | undefined): Promise<boolean> {
  if (lease) lease.leaseFrom = Date.now();
  try {
    await fsLink(token.path, path);
    return true;
  } catch (err) {
    if (lease) lease.leaseFrom = undefined;
    if (errnoOf(err) !== 'EEXIST') throw err;
    return false;
  }
}

/**
 * Takes the lock file at `path` with `token` (a temp file in the same directory `dir`),
 * waiting (with capped exponential backoff on `timing.clock`) while a live process holds it
 * and breaking it when it is stale, as `waiting` says. Rejects with its `timedOut` after
 * `lockTimeoutMs`; ENOENT (the directory vanished, the token was swept) passes through.
 */
export async function linkWhenFree<H extends Holder>(
  path: string,
  dir: string,
  token: LockToken,
  timing: LockTiming,
  waiting: LockWaiting<H>,
): Promise<HeldLock> {
  const start = timing.clock.now();
  let delay = 1;
  let brokeStale = false;
  for (;;) {
    if (await tryLink(token, path, waiting.lease)) return brokeStale ? { path, dir, token, brokeStale } : { path, dir, token };
    const state = await waiting.inspect();
    if (state === 'gone') continue;
    if (state.stale && waiting.takeOver) {
      if (await waiting.takeOver(state)) return { path, dir, token, brokeStale: true };
    } else if (state.stale) {
      await waiting.beforeBreak?.();
      if (await breakLock(path, dir, state.ino, timing)) brokeStale = true;
      continue;
    }
    const waited = timing.clock.now() - start;
    if (waited >= timing.lockTimeoutMs) throw waiting.timedOut(state, waited);
    await sleep(timing.clock, (waiting.pauseMs?.(delay, state) ?? delay) * (0.5 + Math.random()));
    delay = Math.min(delay * 2, waiting.maxDelayMs);
  }
}

/** {@link linkWhenFree} for the lock of `key`; its refusal says which key and which process holds it. */
export function acquireLock(path: string, dir: string, key: string, token: LockToken, timing: LockTiming): Promise<HeldLock> {
  return linkWhenFree(path, dir, token, timing, {
    inspect: () => inspectLock(path, dir, timing),
    timedOut: (holder) =>
      new CheckpointError(
        'checkpoint_atomic_write_failed',
        `lock of ${key} is held by a live process (pid ${holder.pid ?? '?'}) for over ${timing.lockTimeoutMs} ms`,
        { details: { key, reason: 'lock_timeout', holderPid: holder.pid ?? -1 } },
      ),
    maxDelayMs: 50,
  });
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

/*
 * Kept tokens. A lock taken again and again (the journal's, the packed store's) is taken with
 * a temp file kept open between holds while it is young: one link(2) takes the lock.
 */

/** A token kept open: its descriptor renews the lock's lease (futimes). */
export interface KeptToken extends LockToken {
  readonly fd: number;
}

/** A lock's user that keeps a token between holds. */
export interface TokenKeeper {
  readonly io: Pick<FsIo, 'open' | 'close' | 'fstat' | 'unlink'>;
  readonly timing: LockTiming;
  spare: KeptToken | undefined;
}

/** A new token: a temp file made at `at(name)` (in the lock's directory) with `mode`. */
export async function newToken(k: TokenKeeper, at: (name: string) => string, mode: number): Promise<KeptToken> {
  const owner = newOwner(k.timing.clock.now());
  const path = at(tempName(owner));
  const fd = await k.io.open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    return { path, fd, ino: (await k.io.fstat(fd)).ino, owner };
  } catch (err) {
    await dropToken(k, { path, fd });
    throw err;
  }
}

/** Closes and removes a token (failures ignored: a temp file left is swept once its owner is gone). */
export async function dropToken(k: TokenKeeper, t: { readonly path: string; readonly fd: number }): Promise<void> {
  await Promise.all([k.io.close(t.fd).catch(() => undefined), k.io.unlink(t.path).catch(() => undefined)]);
}

/**
 * A kept token stays well inside the stale bound: others judge a lock by its token's age (and
 * sweep temp files older than the bound), and a hold lasts a fraction of it more.
 */
const young = (k: TokenKeeper, t: LockToken): boolean => k.timing.clock.now() - t.owner.atMs <= k.timing.staleAfterMs / 4;

/**
 * Takes a lock by `take` with the kept token while it is young, else a new one (made by
 * `newToken`): a kept token someone removed (a sweep: ENOENT) is replaced once by a fresh one.
 * When `take` fails, `onFailure` runs and the token is dropped.
 */
export async function takeWithToken<T>(
  k: TokenKeeper,
  make: () => Promise<KeptToken>,
  take: (token: KeptToken) => Promise<T>,
  onFailure?: () => void,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    let token = k.spare;
    k.spare = undefined;
    if (token && !young(k, token)) {
      await dropToken(k, token);
      token = undefined;
    }
    const reused = token !== undefined;
    token ??= await make();
    try {
      return await take(token);
    } catch (err) {
      onFailure?.();
      await dropToken(k, token);
      if (reused && attempt === 0 && errnoOf(err) === 'ENOENT') continue;
      throw err;
    }
  }
}

/** After a hold: `token` is kept for the next one when `keep`, no other is kept and it is young; else dropped. */
export async function keepOrDropToken(k: TokenKeeper, token: KeptToken, keep: boolean): Promise<void> {
  if (keep && k.spare === undefined && young(k, token)) k.spare = token;
  else await dropToken(k, token);
}

/** Drops the kept token, if any (on close). */
export async function dropSpareToken(k: TokenKeeper): Promise<void> {
  const t = k.spare;
  k.spare = undefined;
  if (t) await dropToken(k, t);
}

/** Whether `name` is a temp file or a broken lock of a process gone (or older than the stale bound): anyone may remove it. */
export function leftBehind(name: string, timing: LockTiming): boolean {
  const owner = classifyInternal(name)?.owner;
  return owner !== undefined && ownerGone(owner, timing.clock.now(), timing.staleAfterMs);
}
