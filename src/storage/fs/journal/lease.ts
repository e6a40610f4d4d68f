import { CheckpointError, type CheckpointErrorDetails } from '../../../contract/errors.js';
import type { FsIo } from '../fd.js';
import type { LockTiming } from '../lock.js';
import { lstatIfAny } from '../lock.js';
import { JOURNAL_LOCK } from './files.js';
import type { JournalState } from './state.js';

/*
 * The journal lock's lease (DESIGN invariant 7, as the run lock's): a lock is taken by
 * link(2), which sets the lock inode's ctime, and renewed by futimes on the holder's token
 * (which sets it again). Another process may break a lock whose ctime is older than the
 * lease, whether its holder is alive or not: a stopped (SIGSTOP) or stalled holder blocks
 * the directory for one lease at most.
 *
 * The holder counts its lease from just before its link or renewal began (never later than
 * the ctime others judge it by) and trusts it for half of it only: others may break it after
 * a whole lease, so what the holder does inside the first half cannot overlap a breaker's
 * work. Every write of the holder is fenced by that check — the commit's record before and
 * after it is written (a record whose write ended past the trusted half is not
 * acknowledged), each apply's rename, each replay's repair. A breaker replaces the journal
 * files with new ones (see swapJournalFiles), so a write a fenced holder had already
 * started lands in a file nobody reads any more.
 */

/** The journal lock's lease: 5 s, shorter with a short stale bound (always well past maxHoldMs). */
export const journalLeaseMs = (timing: LockTiming): number => Math.max(100, Math.min(5000, timing.staleAfterMs / 2));

/**
 * How old a claim of the journal lock is before it is climbed past (../take-over.ts): a fifth of
 * the lease, as the packed store's lock. A claimer killed while taking the lock over blocks the
 * directory for that much more than a stopped holder does (one lease); a claimer's steps (a
 * look at the lock, the replay owed written down, a link) take milliseconds, far inside the
 * tenth of a lease in which it may act.
 */
export const journalClaimStaleMs = (leaseMs: number): number => leaseMs / 5;

/** A holder's lease of a lock: when it began (before the link or renewal that set it), while the lock is held, and how long it lasts. */
export interface Lease {
  leaseFrom: number | undefined;
  readonly leaseMs: number;
}

/** True while this process's lease surely runs (the first half of it). */
export function leaseHeld(s: Lease, at = Date.now()): boolean {
  return s.leaseFrom !== undefined && at < s.leaseFrom + s.leaseMs / 2;
}

/**
 * `checkpoint_atomic_write_failed` for a holder whose lease may have ended before `what`: nothing
 * more is written. `whose` names the lock, `taken` what another process may have taken.
 */
export function leaseRanOut(whose: string, what: string, taken: string, details: CheckpointErrorDetails): CheckpointError {
  return new CheckpointError(
    'checkpoint_atomic_write_failed',
    `${whose} lease ran out before ${what} (this process was paused or stalled; another process may have taken ${taken}): ` +
      'nothing of it was acknowledged — retry the write',
    { details },
  );
}

/** {@link leaseRanOut} for the journal lock. */
export const leaseLost = (what: string): CheckpointError =>
  leaseRanOut("the journal lock's", what, 'the journal', { key: 'journal', reason: 'journal_lease_lost' });

/**
 * `checkpoint_atomic_write_failed` for a wait for a leased lock that ran out after `waitedMs`:
 * who holds `what` and when its lease ends, and what to do (`advice` follows "retry the write").
 */
export function leasedLockBusy(
  what: string,
  holder: { readonly pid?: number | undefined; readonly leftMs: number },
  waitedMs: number,
  advice: string,
  details: { readonly key: string; readonly withLeaseEnd: boolean },
): CheckpointError {
  const leftMs = Math.max(0, Math.round(holder.leftMs));
  return new CheckpointError(
    'checkpoint_atomic_write_failed',
    `${what} is busy: waited ${waitedMs} ms for its lock (held by pid ${holder.pid ?? '?'}, whose lease ends in ${leftMs} ms); ` +
      `nothing was written — retry the write${advice}`,
    {
      details: {
        key: details.key,
        reason: 'lock_timeout',
        holderPid: holder.pid ?? -1,
        ...(details.withLeaseEnd ? { leaseEndsInMs: leftMs } : {}),
      },
    },
  );
}

/** Throws {@link leaseLost} unless the lease surely runs. */
export function assertLease(s: JournalState, what: string): void {
  if (!leaseHeld(s)) throw leaseLost(what);
}

/** How much of the lease a renewal may still use: no one breaks the lock before all of it has run (a tenth kept for clock skew). */
const RENEWABLE = 0.9;

/**
 * Renews the lease: the lock is checked to be ours still, then its ctime moved to now. The
 * new lease counts from before the check, and only if the renewal ended before anyone could
 * break the old lease (nine tenths of it): then the futimes surely touched our lock. Past
 * the trusted half, this is how a commit gets its lease back after a stall that was not a
 * take-over (a slow event loop).
 */
export async function renewLease(s: JournalState): Promise<void> {
  const h = s.held;
  if (h) await renewLeaseOf(s, s.root.at(JOURNAL_LOCK), h.token, s.io, () => s.held === h);
}

/**
 * {@link renewLease} for any lock taken by linking a token: `lockPath` is the lock, `token` the
 * temp file linked there (its descriptor is futimes'd), `stillHeld` says the same hold goes on.
 */
export async function renewLeaseOf(
  s: Lease,
  lockPath: string,
  token: { readonly fd: number; readonly ino: bigint },
  io: Pick<FsIo, 'futimes'>,
  stillHeld: () => boolean,
): Promise<void> {
  const old = s.leaseFrom;
  const from = Date.now();
  const renewable = (at: number): boolean => old !== undefined && at < old + s.leaseMs * RENEWABLE;
  if (!renewable(from)) return;
  const st = await lstatIfAny(lockPath).catch(() => undefined);
  if (st?.ino !== token.ino) return;
  await io.futimes(token.fd, from / 1000);
  if (stillHeld() && s.leaseFrom === old && renewable(Date.now())) s.leaseFrom = from;
}

/** Renews the lease every quarter of it while the lock is held (a long replay or release keeps it). */
export function startRenewal(s: JournalState): void {
  stopRenewal(s);
  s.renewal = setInterval(() => void renewLease(s).catch(() => undefined), s.leaseMs / 4);
  s.renewal.unref?.();
}

export function stopRenewal(s: JournalState): void {
  if (s.renewal) clearInterval(s.renewal);
  s.renewal = undefined;
}
