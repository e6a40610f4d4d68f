/**
 * The packed store's lock, shared by every process on its directory: `.sp\packed\lock` in it, taken by link(2) of a token temp file of ours (the fs store's lock, ../fs/lock.ts),
 * with the journal lock's lease (../fs/journal/lease.ts): counted from the lock inode's ctime
 * (set by the link, moved by futimes on renewal), trusted by its holder for the first half only,
 * taken over by anyone once it ran out (in one rename, by the one waiter that claims it:
 * ../fs/take-over.ts) — a stopped or stalled holder blocks the others for one lease, and a
 * claimer killed while taking it over for a fifth of a lease more (its claim's stale age).
 *
 * Letting the lock go inside the trusted half is one unlink, made synchronously right after that
 * check: an asynchronous one runs when libuv's pool gets to it, and a pool stalled past the rest
 * of the lease would remove the lock of whoever took it over meanwhile. Past the trusted half the
 * release claims the lock's inode first (../fs/take-over.ts).
 *
 * A holder may have a write in flight when its lease runs out (its pool thread late, the process
 * stopped): that write lands later, at the place the holder planned, after others may have
 * written there. So whoever breaks a lock first writes down a **seal owed** (the file
 * `.sp\packed\seal-owed`), and whoever takes the lock and finds it seals the active segment at its
 * intact end and starts a new one before writing anything (hold.ts): the late write lands past
 * the sealed length, where nobody reads. The debt is written before the take-over and settled
 * only by a holder that sealed, since the breaker may die in between.
 */
import { constants } from 'node:fs';
import { sleep, systemClock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import type { FsIo } from '../fs/fd.js';
import { errnoOf } from '../fs/io.js';
import { leaseHeld, leaseRanOut, leasedLockBusy, renewLeaseOf, type Lease } from '../fs/journal/lease.js';
import { inspectLeasedLock } from '../fs/journal/queue.js';
import {
  dropSpareToken,
  keepOrDropToken,
  linkWhenFree,
  lstatIfAny,
  newToken,
  takeWithToken,
  type HeldLock,
  type KeptToken,
  type LockTiming,
} from '../fs/lock.js';
import { releaseClaimed, takeOverStale, unlinkLockNow } from '../fs/take-over.js';
import type { PackedIo } from './io.js';
import { PACKED_PREFIX } from './manifest.js';

const { O_WRONLY, O_CREAT, O_NOFOLLOW } = constants;

export const LOCK_NAME = `${PACKED_PREFIX}lock`;
export const SEAL_OWED_NAME = `${PACKED_PREFIX}seal-owed`;

/** The file-system calls the lock makes (the store's seam). */
export type LockIo = Pick<FsIo, 'open' | 'close' | 'fsync' | 'fstat' | 'unlink' | 'futimes'> & Pick<PackedIo, 'unlinkSync'>;

/** Options of the lock (tests shorten them). */
export interface PackedLockOptions {
  /** How long the lock is kept after a group, for the next one (ms). @default 20 */
  readonly lingerMs?: number;
  /** The lock's lease (ms): a holder trusts the first half; others break it once all of it ran out. @default 5000 */
  readonly leaseMs?: number;
  /** How long a writer waits for a live holder before its calls fail (ms). @default 10000 */
  readonly lockTimeoutMs?: number;
}

/** One hold of the lock. */
export interface Hold {
  readonly lock: HeldLock;
  /** The temp file our lock is a link of, kept between holds while young (one link(2) takes the lock). */
  readonly token: KeptToken;
  /** When it was taken (Date.now()). */
  readonly since: number;
}

/** The lock as one store sees it. */
export interface PackedLock extends Lease {
  /** The store's directory (holds the lock, the seal owed and our token). */
  readonly dir: string;
  readonly path: string;
  readonly io: LockIo;
  readonly timing: LockTiming;
  readonly lingerMs: number;
  /** At most how long one hold lasts: then the lock goes, and waiters get a turn before it is taken again. */
  readonly maxHoldMs: number;
  held: Hold | undefined;
  spare: KeptToken | undefined;
  /** The timer letting the lock go once no group came for lingerMs, and when the last group ended (Date.now()). */
  linger: ReturnType<typeof setTimeout> | undefined;
  idleSince: number;
  /** A claim older than this is a stalled or killed claimer's, climbed past by the others (ms; a fifth of the lease). */
  readonly claimStaleMs: number;
  /** Our release under way, if any (a take waits for it). */
  releasing: Promise<void> | undefined;
  /** A hold that ended at maxHoldMs: the next take waits until then, so a waiter polling for the lock finds it free. */
  yieldUntil: number;
}

/** A hold's length at most, and the pause after it, in ms. */
const YIELD_MS = 10;

export function createPackedLock(dir: string, io: LockIo, options: PackedLockOptions = {}): PackedLock {
  const leaseMs = options.leaseMs ?? 5000;
  return {
    dir,
    path: `${dir}/${LOCK_NAME}`,
    io,
    // A token older than staleAfterMs counts as its owner's gone: a kept one stays well inside it (../fs/lock.ts).
    timing: { clock: systemClock, staleAfterMs: Math.max(60_000, leaseMs * 4), lockTimeoutMs: options.lockTimeoutMs ?? 10_000 },
    lingerMs: options.lingerMs ?? 20,
    maxHoldMs: Math.min(1000, leaseMs / 4),
    leaseMs,
    leaseFrom: undefined,
    held: undefined,
    spare: undefined,
    linger: undefined,
    idleSince: 0,
    claimStaleMs: leaseMs / 5,
    releasing: undefined,
    yieldUntil: 0,
  };
}

/** True while the lock is ours and its lease surely runs: nothing else can write the store. */
export const holdsLease = (l: PackedLock, at = Date.now()): boolean => l.held !== undefined && leaseHeld(l, at);

/** `checkpoint_atomic_write_failed` for a group whose lease may have ended before it was written (or before its write returned). */
export const leaseLostError = (dir: string): CheckpointError =>
  leaseRanOut(`packed store ${dir}: the lock's`, 'the write was done', 'the store', { key: 'packed', reason: 'packed_lease_lost' });

/** Throws {@link leaseLostError} unless this process holds the lock inside its trusted lease. */
export function assertLeaseOf(l: PackedLock, dir: string): void {
  if (!holdsLease(l)) throw leaseLostError(dir);
}

/** The refusal of a wait that ran out: a lock whose lease ran out is being taken over by another waiter (or its claimer was killed). */
function lockTimeout(
  l: PackedLock,
  holder: { readonly pid?: number; readonly leftMs: number; readonly stale: boolean },
  waited: number,
): CheckpointError {
  if (!holder.stale)
    return leasedLockBusy(`packed store ${l.dir}`, holder, waited, ' or raise lockTimeoutMs', { key: 'packed', withLeaseEnd: false });
  return new CheckpointError(
    'checkpoint_atomic_write_failed',
    `packed store ${l.dir} is busy: waited ${waited} ms for its lock, whose holder (pid ${holder.pid ?? '?'}) is gone or let its lease run out, ` +
      `while another waiter claimed it (a claim is climbed past after ${l.claimStaleMs} ms); nothing was written — retry the write or raise lockTimeoutMs`,
    { details: { key: 'packed', reason: 'lock_timeout', holderPid: holder.pid ?? -1 } },
  );
}

/** Writes down that the active segment must be sealed before the next write (idempotent). */
async function oweSeal(l: PackedLock): Promise<void> {
  const fd = await l.io.open(`${l.dir}/${SEAL_OWED_NAME}`, O_WRONLY | O_CREAT | O_NOFOLLOW, 0o644);
  try {
    await l.io.fsync(fd);
  } finally {
    await l.io.close(fd);
  }
}

/** Whether a seal is owed (checked by each new holder). */
export async function sealOwed(l: PackedLock): Promise<boolean> {
  return (await lstatIfAny(`${l.dir}/${SEAL_OWED_NAME}`)) !== undefined;
}

/**
 * Removes the debt once the seal is durable, only while the lease surely runs (so no later
 * breaker's debt is removed): checked and removed in adjacent synchronous calls, as a release.
 */
export function settleSeal(l: PackedLock): void {
  if (!holdsLease(l)) return;
  try {
    l.io.unlinkSync(`${l.dir}/${SEAL_OWED_NAME}`);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}

/** Waits for the lock with `token` (its lease counted from each link), taking a stale one over (the seal owed written first). */
function linkWaiting(l: PackedLock, token: KeptToken): Promise<HeldLock> {
  const inspect = () => inspectLeasedLock(l.path, l.dir, l.leaseMs, l.timing);
  return linkWhenFree(l.path, l.dir, token, l.timing, {
    inspect,
    // Never broken by rename and put back (two holders, see ../fs/take-over.ts): taken over in one rename.
    takeOver: (holder) =>
      takeOverStale(l.path, l.dir, token, holder.ino, { inspect, beforeBreak: () => oweSeal(l), lease: l, claimStaleMs: l.claimStaleMs }),
    timedOut: (holder, waited) => lockTimeout(l, holder, waited),
    maxDelayMs: 4,
    // A pause never runs past the holder's lease end, when its lock may be broken.
    pauseMs: (delay, holder) => Math.min(delay, Math.max(1, holder.leftMs)),
    lease: l,
  });
}

/** Takes the lock (waiting for a live holder, breaking a stale one). */
export async function takeLock(l: PackedLock): Promise<Hold> {
  // Our release under way is over first: it must not end after (and undo) this take.
  if (l.releasing) await l.releasing.catch(() => undefined);
  const wait = l.yieldUntil - Date.now();
  if (wait > 0) await sleep(l.timing.clock, wait);
  const at = (name: string): string => `${l.dir}/${name}`;
  return takeWithToken(
    l,
    () => newToken(l, at, 0o644),
    async (token) => {
      const lock = await linkWaiting(l, token);
      l.held = { lock, token, since: Date.now() };
      return l.held;
    },
  );
}

/** Lets the lock go (never someone else's: see `release`); the token is kept for the next hold while young. */
export function letGoLock(l: PackedLock, keepToken = true): Promise<void> {
  const h = l.held;
  if (!h) return l.releasing ?? Promise.resolve();
  // Checked and let go in adjacent synchronous calls (see the header): no stall between them but the process's own.
  const trusted = holdsLease(l);
  if (trusted) unlinkNow(l);
  l.held = undefined;
  l.leaseFrom = undefined;
  stopLinger(l);
  if (Date.now() - h.since >= l.maxHoldMs) l.yieldUntil = Date.now() + YIELD_MS;
  const done = release(l, h, keepToken, trusted).finally(() => {
    if (l.releasing === done) l.releasing = undefined;
  });
  l.releasing = done;
  return done;
}

/**
 * Inside the trusted part of its lease nobody may take the lock over: its name is ours, and one
 * unlink let it go already (`letGoLock`). Past it, another process may be taking it over: its
 * inode is claimed first (../fs/take-over.ts), so a lock that is someone else's by then is never removed.
 */
async function release(l: PackedLock, h: Hold, keepToken: boolean, trusted: boolean): Promise<void> {
  if (!trusted) await releaseClaimed(l.path, h.token.ino, l.claimStaleMs).catch(() => undefined);
  await keepOrDropToken(l, h.token, keepToken);
}

/** The release inside the trusted lease: the lock's unlink (tried twice, see `unlinkLockNow`); a lock still left runs out its lease. */
function unlinkNow(l: PackedLock): void {
  try {
    unlinkLockNow((path) => l.io.unlinkSync(path), l.path);
  } catch {
    // Left to its lease.
  }
}

export function stopLinger(l: PackedLock): void {
  if (l.linger) clearTimeout(l.linger);
  l.linger = undefined;
}

/** Drops the kept token (on close). */
export const dropSpare = (l: PackedLock): Promise<void> => dropSpareToken(l);

/** Renews the lease when less than half its trusted part is left (a hold kept busy by slow writes). */
export async function renewIfOld(l: PackedLock): Promise<void> {
  const h = l.held;
  if (!h || l.leaseFrom === undefined || Date.now() < l.leaseFrom + l.leaseMs / 4) return;
  await renewLeaseOf(l, l.path, h.token, l.io, () => l.held === h);
}
