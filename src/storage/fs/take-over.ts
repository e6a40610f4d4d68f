/**
 * Taking over a stale lock without its name ever being absent, for a lock taken by link(2) of a
 * token (../fs/lock.ts) and shared by many waiters (the packed store's).
 *
 * Breaking a stale lock by renaming it away and then linking our token may grab a live lock: when
 * several waiters find the same stale lock, the first breaks it and links its own, and a second,
 * which looked before, renames that live lock away. Putting it back by link leaves a moment where
 * the name is free: a third waiter links there, and two processes hold the lock, each writing the
 * store as its only writer (both seal the active segment, and the manifest naming one's new
 * segment drops the other's, acknowledged writes and all).
 *
 * So a lock's name is only ever removed or replaced by whoever **claims** the inode it holds: an
 * `O_EXCL` file named after the lock and that inode (`<lock>-breaking-<ino>`). A waiter that found
 * the lock stale claims its inode, looks again (still that inode, still stale: nothing but the
 * claimer can change it now), then renames a second link of its token over the lock: one atomic
 * step from the stale holder to the new one. A holder letting its lock go late (past the trusted
 * part of its lease, when others may be taking it over) claims its own inode the same way first.
 * A claim left by a claimer that died is removed once older than the lock's lease.
 */
import { constants } from 'node:fs';
import fsp from 'node:fs/promises';
import { fdClose, fdOpen, fdStat, fsLink, fsRename } from './fd.js';
import { errnoOf } from './io.js';
import { lstatIfAny, type Holder, type LockToken } from './lock.js';
import { deadName, newOwner } from './names.js';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** The claim of the lock at `path` while it holds inode `ino`. */
export const claimPath = (path: string, ino: bigint): string => `${path}-breaking-${ino}`;

/** A claim made: its path and inode (to tell it from a later claim of the same name). */
interface Claim {
  readonly path: string;
  readonly ino: bigint;
}

/** Claims inode `ino` of the lock at `path`; undefined when someone else holds the claim (one older than `staleMs` is removed for a later try). */
async function claim(path: string, ino: bigint, staleMs: number): Promise<Claim | undefined> {
  const at = claimPath(path, ino);
  let fd: number;
  try {
    fd = await fdOpen(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  } catch (err) {
    if (errnoOf(err) !== 'EEXIST') throw err;
    await dropIfOld(at, staleMs);
    return undefined;
  }
  try {
    return { path: at, ino: (await fdStat(fd)).ino };
  } catch (err) {
    await fsp.unlink(at).catch(() => undefined);
    throw err;
  } finally {
    await fdClose(fd).catch(() => undefined);
  }
}

/** Removes a claim whose claimer died (or stalled past a lease): older than `staleMs`. */
async function dropIfOld(at: string, staleMs: number): Promise<void> {
  const st = await lstatIfAny(at).catch(() => undefined);
  if (st && Date.now() - Number(st.ctimeMs) > staleMs) await fsp.unlink(at).catch(() => undefined);
}

/** Whether our claim still stands (not removed as a dead claimer's after a stall). */
const stillClaimed = async (c: Claim): Promise<boolean> => (await lstatIfAny(c.path).catch(() => undefined))?.ino === c.ino;

const dropClaim = (c: Claim): Promise<void> => fsp.unlink(c.path).catch(() => undefined);

/** How a stale lock is taken over. */
export interface TakeOver<H extends Holder> {
  /** Looks at the lock again (after the claim). */
  readonly inspect: () => Promise<'gone' | H>;
  /** Runs once the take-over is sure, before the lock is replaced (the packed store writes down the seal it then owes). */
  readonly beforeBreak?: () => Promise<void>;
  /** Counted from just before our token's link (which sets the inode's ctime others judge the lease by); dropped on failure. */
  readonly lease?: { leaseFrom: number | undefined };
  /** A claim older than this is a dead claimer's (ms). */
  readonly claimStaleMs: number;
}

/**
 * Replaces the stale lock at `path` (inode `staleIno`, in directory `dir`) by `token` in one
 * rename; true when it did. False when another waiter holds the claim, or the lock is no longer
 * that stale inode: the caller waits and looks again.
 */
export async function takeOverStale<H extends Holder>(
  path: string,
  dir: string,
  token: LockToken,
  staleIno: bigint,
  how: TakeOver<H>,
): Promise<boolean> {
  const c = await claim(path, staleIno, how.claimStaleMs);
  if (!c) return false;
  try {
    const now = await how.inspect();
    if (now === 'gone' || !now.stale || now.ino !== staleIno) return false;
    await how.beforeBreak?.();
    return await replaceWith(path, `${dir}/${deadName(newOwner(Date.now()))}`, token, c, how.lease);
  } finally {
    await dropClaim(c);
  }
}

/** Links `token` at `aside` and renames that over the lock, unless the claim was lost meanwhile. */
async function replaceWith(
  path: string,
  aside: string,
  token: LockToken,
  c: Claim,
  lease: { leaseFrom: number | undefined } | undefined,
): Promise<boolean> {
  if (lease) lease.leaseFrom = Date.now();
  try {
    await fsLink(token.path, aside);
    if (!(await stillClaimed(c))) {
      await fsp.unlink(aside).catch(() => undefined);
      if (lease) lease.leaseFrom = undefined;
      return false;
    }
    await fsRename(aside, path);
    return true;
  } catch (err) {
    if (lease) lease.leaseFrom = undefined;
    await fsp.unlink(aside).catch(() => undefined);
    throw err;
  }
}

/**
 * Lets go a lock this process holds (token inode `ino`) after the trusted part of its lease:
 * others may be taking it over, so its inode is claimed first; a lock replaced already, or being
 * taken over (the claim is someone else's), is left alone.
 */
export async function releaseClaimed(path: string, ino: bigint, claimStaleMs: number): Promise<void> {
  const c = await claim(path, ino, claimStaleMs);
  if (!c) return;
  try {
    if ((await lstatIfAny(path))?.ino === ino) await fsp.unlink(path);
  } finally {
    await dropClaim(c);
  }
}
