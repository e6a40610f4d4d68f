import fsp from 'node:fs/promises';
import { constants } from 'node:fs';
import { sleep, type Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import { fsLink, type FsIo } from './fd.js';
import { errnoOf, lstatIfAny } from './io.js';
import { INTERNAL_MARK, classifyInternal, newOwner, ownerGone, parseOwner, tempName, type Owner } from './names.js';
import { letGoHeld, takeOverStale } from './take-over.js';

export { lstatIfAny };

/*
 * Per-key locks. The lock of a key is a file named after it in the key's directory, and
 * taking it is link(2) of the writer's own temp file to that name: atomic, and it fails
 * with EEXIST while anyone holds the lock, in this process or another. (A delete, which has
 * no temp file, makes an empty one to lock with.)
 *
 * Why a hard link of the temp file: the lock is taken and released on every write, so it
 * must cost next to nothing. A symlink or an O_EXCL file allocates and frees an inode each
 * time, which measurably lengthened every fsync (~1 ms per put on ext4); linking the temp
 * file only touches a directory block and an inode the write dirties anyway.
 *
 * Who holds a lock: the temp file (`.sp\tmp-<host>-<pid>-<time>-<id>`) with the same inode
 * number, found by listing the directory — only when the lock is contended. A lock is
 * stale when that owner's process is gone (same host), when it is older than
 * `staleAfterMs`, or when no temp file has its inode any more (its holder died and was
 * swept). A holder keeps a temp name of its token until its release is over: a
 * put links a second temp name to its file before renaming it over the key (direct-write.ts),
 * so its lock does not look stale while it commits and lets go.
 *
 * A lock's name is removed or replaced only by its holder or by whoever claims the inode it
 * holds (take-over.ts): a waiter that finds the lock stale takes it over in one rename of a
 * second link of its token (it then holds the lock), and the open-time sweep removes it under
 * a claim (sweep.ts). No step renames a lock away to look at it, so the name is never free
 * while a live lock is away from it.
 *
 * A holder trusts its lock for half the stale bound, counted from its token's owner time on
 * the store's clock (by which the others judge the lock's age): inside that half its process
 * lives and its temp file is there and young, so nobody judges the lock stale, and letting it
 * go is one unlink, made synchronously right after that check (and a look that the name holds
 * its inode). Past it, others may be taking the lock over: the release claims its own inode
 * first (`releaseClaimed`), and so never removes a lock that is someone else's by then. Before
 * committing, a holder past that half checks that the lock is still its own (`assertHeld`): a
 * lock taken over from a stalled holder makes it abort instead of writing.
 *
 * A key's claims go stale (are climbed past) after a twentieth of the stale bound, 3 s by
 * default: a claimer killed while taking a lock over delays that key's writers by that much,
 * where a hung holder delays them by the whole bound, and well inside how long they wait before
 * giving up (lockTimeoutMs, 10 s); a claimer's own steps (a listing of the directory, a link)
 * take milliseconds, far inside the half of it in which it may act. It follows from the stale
 * bound alone, since every process sharing a directory must judge claims alike (as it judges
 * locks: one `staleAfterMs` for all).
 *
 * The journal's lock and the packed store's are this lock too, taken with kept tokens (below)
 * and judged by a lease whose first half their holder trusts, in place of the stale bound: taken
 * over by the waiter that claims them (journal/queue.ts, ../fs-packed/lock.ts), and let go by
 * one synchronous unlink inside the trusted half, by a claimed release after it (journal/hold.ts);
 * the open-time sweep removes a journal lock whose holder is gone under a claim too
 * (journal/replay-owed.ts).
 *
 * What no check excludes: a process stopped (SIGSTOP, a paused VM) between such a check and
 * the system call after it, for over half the stale bound (a release) or half a claim's stale
 * age (a take-over or a sweep's removal); a holder stalled past the stale bound between
 * `assertHeld` and its rename; clocks of processes sharing a directory (another host's, on a
 * shared mount) apart by more than half the stale bound.
 *
 * Every call but those synchronous steps is asynchronous (no other file-system call blocks the
 * event loop), and the paths may be `/proc/<pid>/fd/<dir fd>/<name>` names (see dir.ts): `dir`
 * is a directory path prefix.
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
  /** Directory holding it (for the second link of a token taking a lock over). */
  readonly dir: string;
  readonly token: LockToken;
  /** True when taking it meant taking a stale lock over: its holder died (or stalled) holding it. */
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
  // its holder has let it go since (or died and was swept).
  const owner = (temps ?? (await tempsByInode(dir))).get(st.ino);
  if (!owner) return { ino: st.ino, stale: true };
  return { ino: st.ino, stale: ownerGone(owner, timing.clock.now(), timing.staleAfterMs), pid: owner.pid };
}

/** How a lock is waited for: what a waiter sees of its holder, how it takes a stale lock over, when it gives up. */
export interface LockWaiting<H extends Holder> {
  readonly inspect: () => Promise<'gone' | H>;
  /** The refusal of a wait that ran out after `waitedMs`. */
  readonly timedOut: (holder: H, waitedMs: number) => CheckpointError;
  /** The backoff's cap (ms); `pauseMs` shortens a pause (before jitter) given the holder. */
  readonly maxDelayMs: number;
  readonly pauseMs?: (delay: number, holder: H) => number;
  /** A lease of the lock, counted from just before each link and dropped when the link fails. */
  readonly lease?: { leaseFrom: number | undefined };
  /**
   * Takes a stale lock over (take-over.ts, which runs what is owed before it); true when it did,
   * false when another waiter is taking it over or it changed (then it is waited for as a live one).
   */
  readonly takeOver: (holder: H) => Promise<boolean>;
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
 * and taking it over when it is stale, as `waiting` says. Rejects with its `timedOut` after
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
  for (;;) {
    if (await tryLink(token, path, waiting.lease)) return { path, dir, token };
    const state = await waiting.inspect();
    if (state === 'gone') continue;
    if (state.stale && (await waiting.takeOver(state))) return { path, dir, token, brokeStale: true };
    const waited = timing.clock.now() - start;
    if (waited >= timing.lockTimeoutMs) throw waiting.timedOut(state, waited);
    await sleep(timing.clock, (waiting.pauseMs?.(delay, state) ?? delay) * (0.5 + Math.random()));
    delay = Math.min(delay * 2, waiting.maxDelayMs);
  }
}

/** {@link linkWhenFree} for the lock of `key`; its refusal says which key and which process holds it. */
export function acquireLock(path: string, dir: string, key: string, token: LockToken, timing: LockTiming): Promise<HeldLock> {
  const inspect = (): Promise<LockState> => inspectLock(path, dir, timing);
  return linkWhenFree(path, dir, token, timing, {
    inspect,
    takeOver: (holder) => takeOverStale(path, dir, token, holder.ino, { inspect, claimStaleMs: keyClaimStaleMs(timing) }),
    timedOut: (holder) =>
      new CheckpointError(
        'checkpoint_atomic_write_failed',
        `lock of ${key} is held by a live process (pid ${holder.pid ?? '?'}) for over ${timing.lockTimeoutMs} ms`,
        { details: { key, reason: 'lock_timeout', holderPid: holder.pid ?? -1 } },
      ),
    maxDelayMs: 50,
  });
}

/** How old a claim of a key's lock is before it is climbed past: a twentieth of the stale bound (see the header). */
export const keyClaimStaleMs = (timing: LockTiming): number => timing.staleAfterMs / 20;

/** Whether the holder of `lock` trusts it now: inside half the stale bound from its token's owner time (see the header). */
const trusted = (lock: HeldLock, timing: LockTiming): boolean => timing.clock.now() - lock.token.owner.atMs <= timing.staleAfterMs / 2;

/**
 * Before committing: a lock inside its trusted half cannot have been taken over (only gone or
 * stale holders are, and our temp file still exists), so this costs no call on the normal path.
 */
export async function assertHeld(lock: HeldLock, key: string, timing: LockTiming): Promise<void> {
  if (trusted(lock, timing)) return;
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
 * Releases a held lock, never someone else's: inside its trusted half one unlink, checked and
 * made in one synchronous step; past it, its inode is claimed first (take-over.ts), since others
 * may be taking it over. The caller keeps a temp name of the token until this is over (else
 * the lock looks stale at once). Failures are ignored: a lock left is stale once its token goes.
 */
export function releaseLock(lock: HeldLock, timing: LockTiming): Promise<void> {
  return letGoHeld(lock.path, lock.token.ino, trusted(lock, timing), keyClaimStaleMs(timing));
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
