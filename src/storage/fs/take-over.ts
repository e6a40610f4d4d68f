/**
 * Taking over a stale lock without its name ever being absent, for a lock taken by link(2) of a
 * token (./lock.ts): a key's lock, the journal's, the packed store's.
 *
 * Breaking a stale lock by renaming it away and then linking our token may grab a live lock: when
 * several waiters find the same stale lock, the first breaks it and links its own, and a second,
 * which looked before, renames that live lock away. Putting it back by link leaves a moment where
 * the name is free: a third waiter links there, and two processes hold the lock, each writing as
 * its only writer (a key's conditional put, the journal's records, the packed store's segment).
 *
 * So a lock's name is only ever removed or replaced by its holder, or by whoever **claims** the
 * inode it holds: an `O_EXCL` file named after the lock and that inode (`claimPath`; names.ts
 * `claimPrefix`). A waiter that found the lock stale claims its inode, looks again (still that
 * inode, still stale: nothing but the claimer can change it now), then renames a second link of
 * its token over the lock: one atomic step from the stale holder to the new one (`takeOverStale`).
 * A process that removes a stale lock without taking it (the open-time sweep) claims it the same
 * way and unlinks it (`removeStale`). A holder letting its lock go late (past the part of its
 * lease or stale bound it trusts, when others may be taking it over) claims its own inode the same
 * way first (`releaseClaimed`).
 *
 * A claimer may die or stall holding its claim. Its claim is then never removed by the others
 * (a removal by name may hit a claim made a moment later under that name, and an inode number
 * tells nothing: a new file may get a freed one): they **climb** past it instead, to the claim of
 * the next level (`<claim>.1`, `.2`, ...), made only once every level below is older than
 * `claimStaleMs` (by its file's mtime). A claimer acts (its rename, or an unlink) only while its
 * claim is younger than half `claimStaleMs` by its own clock, counted from before the claim was
 * made, and no young claim stands above it; that check and the act are adjacent synchronous
 * calls. Nobody climbs past a claim that young, so at most one claimer acts. A claimer that gives
 * up removes its claim only while younger than three quarters of `claimStaleMs` (nobody climbed
 * past it); an older one stays, to be climbed past.
 *
 * What remains: a claimer whose process is stopped (SIGSTOP, a paused VM, a page fault on a
 * swapped-out page) between that check and the very next system call, for over half
 * `claimStaleMs` (a fraction of the lock's lease or stale bound: the packed lock's and the
 * journal's a fifth of the lease, one second by default; a key's a twentieth of the stale bound,
 * three seconds), while others climb past it and take the lock over. A stall in libuv's pool or
 * a slow disk is no such stop: the check runs on the event loop next to the act. A claim normally
 * lives a few milliseconds (the fsync of the packed store's seal owed is the longest step); a
 * claimer slower than half `claimStaleMs` gives up, and may leave its claim, which delays the
 * others by `claimStaleMs`. Once the lock is taken over (or let go, or
 * removed), its claims name an inode the lock no longer holds: the winner removes its level and
 * those below, and sweeps remove claims older than a lease or the stale bound (a claimer killed
 * meanwhile; ../fs-packed/hold.ts, ./sweep.ts).
 */
import fs, { constants } from 'node:fs';
import fsp from 'node:fs/promises';
import { fdClose, fdOpen, fsLink } from './fd.js';
import { errnoOf, lstatIfAny } from './io.js';
import type { Holder, LockToken } from './lock.js';
import { claimPrefix, deadName, newOwner } from './names.js';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** The claim at `level` of the lock at `path` while it holds inode `ino` (level 0 is the first claimer's). */
export const claimPath = (path: string, ino: bigint, level = 0): string => `${claimPrefix(path)}${ino}${level === 0 ? '' : `.${level}`}`;

/** Whether `name` is a claim of the lock named `lockName` (in the same directory). */
export const isClaimOf = (lockName: string, name: string): boolean => name.startsWith(claimPrefix(lockName));

/** Levels climbed at most (each a claimer that stalled or was killed before this lock was taken over). */
const MAX_LEVELS = 64;

/** How often a level found taken but gone when looked at (its claimer let it go) is tried again. */
const RETRIES = 3;

/** A claim made. */
interface Claim {
  readonly lockPath: string;
  readonly ino: bigint;
  readonly level: number;
  /** Date.now() just before its file was made: the others judge it by its file's time, no earlier than this. */
  readonly since: number;
  readonly staleMs: number;
}

const claimAt = (c: Claim, level = c.level): string => claimPath(c.lockPath, c.ino, level);

/** Makes the claim file `at`; false when one exists. */
async function makeClaim(at: string): Promise<boolean> {
  let fd: number;
  try {
    fd = await fdOpen(at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  } catch (err) {
    if (errnoOf(err) === 'EEXIST') return false;
    throw err;
  }
  await fdClose(fd).catch(() => undefined);
  return true;
}

const older = (mtimeMs: bigint | number, than: number): boolean => Date.now() - Number(mtimeMs) > than;

/**
 * Claims inode `ino` of the lock at `path` at the lowest level free, climbing past claims older
 * than `staleMs`; undefined while a younger claim stands (someone else is at it).
 */
async function claim(path: string, ino: bigint, staleMs: number): Promise<Claim | undefined> {
  let retries = 0;
  for (let level = 0; level < MAX_LEVELS;) {
    const at = claimPath(path, ino, level);
    const since = Date.now();
    if (await makeClaim(at)) return { lockPath: path, ino, level, since, staleMs };
    const st = await lstatIfAny(at);
    if (st && !older(st.mtimeMs, staleMs)) return undefined;
    if (st) level++;
    else if (++retries > RETRIES) return undefined;
  }
  return undefined;
}

/**
 * Whether our claim may act now: younger than half its stale age (so nobody climbed past it), and
 * no young claim above it (above a gap a sweep left below a live claim). Synchronous: the act
 * follows at once. Normally one call: no level above ours.
 */
function mayAct(c: Claim): boolean {
  if (Date.now() - c.since >= c.staleMs / 2) return false;
  for (let level = c.level + 1; level < MAX_LEVELS; level++) {
    const above = fs.lstatSync(claimAt(c, level), { bigint: true, throwIfNoEntry: false });
    if (above === undefined) return true;
    if (!older(above.mtimeMs, c.staleMs)) return false;
  }
  return true;
}

/**
 * Lets our claim go. After the lock was taken over or let go its inode is no longer the lock's:
 * the levels below (claimers stalled or killed) go too. Otherwise ours goes only while nobody can
 * have judged it old (checked and removed in adjacent synchronous calls): a waiter that did climbs
 * to the level above, and a new claim made at ours, gone, would not see that waiter's.
 */
async function dropClaim(c: Claim, done: boolean): Promise<void> {
  if (done) {
    for (let level = 0; level <= c.level; level++) await fsp.unlink(claimAt(c, level)).catch(() => undefined);
    return;
  }
  try {
    if (Date.now() - c.since < c.staleMs * 0.75) fs.unlinkSync(claimAt(c));
  } catch {
    // Left: climbed past once old, removed by a later winner or a holder's sweep.
  }
}

/**
 * Removes our claim and the levels below at once, in the synchronous step of the act that made
 * the lock's name free or another inode's: nobody has claimed that name's new lock yet.
 */
function dropClaimsNow(c: Claim): void {
  for (let level = 0; level <= c.level; level++) {
    try {
      fs.unlinkSync(claimAt(c, level));
    } catch {
      // Gone already (a sweep), or left to one.
    }
  }
}

/**
 * Removes a lock this process may remove now, by `unlink` (a synchronous unlink(2)): false when the
 * name was gone. A failure is tried once more at once, still in the caller's synchronous step: a
 * lock left behind would be waited out, one lease or stale bound, by every process, this one too.
 * Throws the second failure.
 */
export function unlinkLockNow(unlink: (path: string) => void, path: string): boolean {
  for (let attempt = 1; ; attempt++) {
    try {
      unlink(path);
      return true;
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return false;
      if (attempt === 2) throw err;
    }
  }
}

/** Unlinks the lock at `path` if it holds inode `ino` (and is no directory), in one synchronous step (the caller checked right before that it may). */
export function unlinkIfIno(path: string, ino: bigint): boolean {
  const st = fs.lstatSync(path, { bigint: true, throwIfNoEntry: false });
  if (st?.ino !== ino || st.isDirectory()) return false;
  return unlinkLockNow(fs.unlinkSync, path);
}

/** How a stale lock is taken over. */
export interface TakeOver<H extends Holder> {
  /** Looks at the lock again (after the claim). */
  readonly inspect: () => Promise<'gone' | H>;
  /** Runs once the take-over (or removal) is sure, before the lock goes (the packed store writes down the seal it then owes, the journal the replay). */
  readonly beforeBreak?: () => Promise<void>;
  /** Counted from just before our token's link (which sets the inode's ctime others judge the lease by); dropped on failure. */
  readonly lease?: { leaseFrom: number | undefined };
  /** A claim older than this is a stalled or dead claimer's (ms): others climb past it. */
  readonly claimStaleMs: number;
}

/**
 * Replaces the stale lock at `path` (inode `staleIno`, in directory `dir`) by `token` in one
 * rename; true when it did. False when another waiter holds the claim, or the lock is no longer
 * that stale inode, or our claim got too old to act on: the caller waits and looks again.
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
  let took = false;
  try {
    const now = await how.inspect();
    if (now === 'gone' || !now.stale || now.ino !== staleIno) return false;
    await how.beforeBreak?.();
    took = await replaceWith(path, `${dir}/${deadName(newOwner(Date.now()))}`, token, c, how.lease);
    return took;
  } finally {
    await dropClaim(c, took);
  }
}

/** Links `token` at `aside` and renames that over the lock, if our claim may still act. */
async function replaceWith(
  path: string,
  aside: string,
  token: LockToken,
  c: Claim,
  lease: { leaseFrom: number | undefined } | undefined,
): Promise<boolean> {
  if (lease) lease.leaseFrom = Date.now();
  let renamed = false;
  try {
    await fsLink(token.path, aside);
    if (mayAct(c)) {
      fs.renameSync(aside, path);
      renamed = true;
    }
  } catch (err) {
    if (lease) lease.leaseFrom = undefined;
    await fsp.unlink(aside).catch(() => undefined);
    throw err;
  }
  if (!renamed) {
    if (lease) lease.leaseFrom = undefined;
    await fsp.unlink(aside).catch(() => undefined);
  } else if (c.ino === token.ino) {
    // The stale lock was a link of our own token: renaming onto a link of the same inode does nothing (POSIX), and leaves `aside`.
    await fsp.unlink(aside).catch(() => undefined);
  }
  return renamed;
}

/**
 * Lets go a lock this process holds (token inode `ino`), never someone else's: while `trusted`
 * (the caller's check, made right before this call: nobody may take the lock over) one unlink,
 * checked and made in the same synchronous step; else its inode is claimed first
 * ({@link releaseClaimed}). Failures are ignored: a lock left runs out its lease or stale bound.
 */
export async function letGoHeld(path: string, ino: bigint, trusted: boolean, claimStaleMs: number): Promise<void> {
  if (trusted) {
    try {
      unlinkIfIno(path, ino);
    } catch {
      // Left to run out.
    }
    return;
  }
  await releaseClaimed(path, ino, claimStaleMs).catch(() => undefined);
}

/**
 * Lets go a lock this process holds (token inode `ino`) after the part of its lease (or stale
 * bound) it trusts: others may be taking it over, so its inode is claimed first; a lock replaced
 * already, or being taken over (the claim is someone else's), is left alone.
 */
export async function releaseClaimed(path: string, ino: bigint, claimStaleMs: number): Promise<void> {
  const c = await claim(path, ino, claimStaleMs);
  if (!c) return;
  let done = false;
  try {
    if (!mayAct(c)) return;
    done = true;
    try {
      // Still ours (not replaced by a take-over that ended before our claim): let it go.
      unlinkIfIno(path, ino);
    } finally {
      dropClaimsNow(c);
    }
  } finally {
    if (!done) await dropClaim(c, false);
  }
}

/**
 * Removes the stale lock at `path` (inode `staleIno`) under a claim of that inode: looked at again
 * (still that inode, still stale), then unlinked right after `mayAct`, in one synchronous step;
 * true when it did. False when another process holds the claim, or the lock is no longer that
 * stale inode, or our claim got too old to act on.
 */
export async function removeStale<H extends Holder>(path: string, staleIno: bigint, how: Omit<TakeOver<H>, 'lease'>): Promise<boolean> {
  const c = await claim(path, staleIno, how.claimStaleMs);
  if (!c) return false;
  let removed = false;
  try {
    const now = await how.inspect();
    if (now === 'gone' || !now.stale || now.ino !== staleIno) return false;
    await how.beforeBreak?.();
    removed = mayAct(c) && unlinkIfIno(path, staleIno);
    if (removed) dropClaimsNow(c);
    return removed;
  } finally {
    if (!removed) await dropClaim(c, false);
  }
}
