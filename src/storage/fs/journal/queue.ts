import { constants } from 'node:fs';
import fsp from 'node:fs/promises';
import { CheckpointError } from '../../../contract/errors.js';
import { fsLink } from '../fd.js';
import { errnoOf } from '../io.js';
import { lstatIfAny, tempsByInode, type HeldLock, type KeptToken, type LockTiming } from '../lock.js';
import { INTERNAL_MARK, newOwner, ownerGone, parseOwner, processGone, type Owner } from '../names.js';
import { takeOverStale } from '../take-over.js';
import { JOURNAL_LOCK } from './files.js';
import { oweReplay } from './replay-owed.js';
import { journalClaimStaleMs, leasedLockBusy } from './lease.js';
import type { JournalState } from './state.js';

/*
 * Taking the journal lock fairly. Every process on a directory must make progress: a
 * holder that commits every few milliseconds would otherwise take the lock back at once
 * each time it lets it go, and a process polling with backoff never found it free (one
 * process acknowledged thousands of checkpoints, the other none).
 *
 * So waiting is a queue of tickets: a process that finds the lock taken makes a ticket file
 * (`.sp\jwait-<owner>`, ordered by the time in its owner tag) and takes the lock only once no
 * older live ticket is left; a holder that sees another's ticket lets the lock go after its
 * fair slice (sliceMs) and, while contended, waits behind the tickets before it takes the
 * lock again. A ticket counts while its process lives and renews it (its ctime, as the
 * lock's lease): a paused waiter delays the others by one lease at most.
 *
 * Uncontended, taking the lock is one link(2), as before. A lock whose holder is gone or whose
 * lease ran out is taken over in one rename by the waiter that claims its inode
 * (../take-over.ts): the name is never free meanwhile, so neither a process that links without
 * a ticket (it saw no contention) nor the open-time sweep, which removes stale locks under a
 * claim too, can hold it beside the waiter.
 */

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
const TICKET_PREFIX = `${INTERNAL_MARK}jwait-`;

/** A held lock, with whether a live (or unknown) holder's lease was broken to take it. */
export type TakenLock = HeldLock & { readonly byLease?: boolean };

interface Ticket {
  readonly name: string;
  readonly owner: Owner;
  readonly fd: number;
  renewedAt: number;
}

/** Order of tickets: older first, ties by tag. */
const before = (a: Owner, b: Owner): boolean => a.atMs < b.atMs || (a.atMs === b.atMs && a.tag < b.tag);

/** The tickets of other waiters in the root, live ones only (dead ones are removed). */
async function liveTickets(s: JournalState, own?: string): Promise<Owner[]> {
  let names: string[];
  try {
    names = await fsp.readdir(s.root.prefix);
  } catch {
    return [];
  }
  const now = Date.now();
  const out: Owner[] = [];
  await Promise.all(
    names
      .filter((n) => n.startsWith(TICKET_PREFIX) && n !== own)
      .map(async (name) => {
        const owner = parseOwner(name.slice(TICKET_PREFIX.length));
        const st = owner ? await lstatIfAny(s.root.at(name)).catch(() => undefined) : undefined;
        if (!st) return;
        const expired = now - Number(st.ctimeMs) > s.leaseMs || processGone(owner!);
        if (expired) await fsp.unlink(s.root.at(name)).catch(() => undefined);
        else out.push(owner!);
      }),
  );
  return out;
}

/** Whether another process (or instance) waits for the lock: the holder lets it go after its slice. */
export async function othersWaiting(s: JournalState): Promise<boolean> {
  return (await liveTickets(s)).length > 0;
}

async function makeTicket(s: JournalState): Promise<Ticket> {
  const owner = newOwner(Date.now());
  const name = `${TICKET_PREFIX}${owner.tag}`;
  const fd = await s.io.open(s.root.at(name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, s.fileMode);
  return { name, owner, fd, renewedAt: Date.now() };
}

async function dropTicket(s: JournalState, t: Ticket): Promise<void> {
  await Promise.all([s.io.close(t.fd).catch(() => undefined), s.io.unlink(s.root.at(t.name)).catch(() => undefined)]);
}

/** What holds a leased lock now: gone, or its inode, whether it may be broken (and because its lease ran out), who holds it and how long its lease has left. */
export type LeasedLockState = 'gone' | { ino: bigint; stale: boolean; byLease: boolean; pid?: number; leftMs: number };

/**
 * Inspects the lock at `lockPath` (in `dir`, with its holders' temp files) whose lease lasts
 * `leaseMs` from its ctime: stale when its holder is gone, its lease ran out or no temp file
 * has its inode any more (its holder let it go, or died and was swept).
 */
export async function inspectLeasedLock(lockPath: string, dir: string, leaseMs: number, timing: LockTiming): Promise<LeasedLockState> {
  const st = await lstatIfAny(lockPath);
  if (!st) return 'gone';
  const leftMs = Number(st.ctimeMs) + leaseMs - Date.now();
  if (!st.isFile()) return { ino: st.ino, stale: true, byLease: false, leftMs };
  const owner = (await tempsByInode(dir)).get(st.ino);
  if (!owner) return { ino: st.ino, stale: true, byLease: false, leftMs };
  const gone = ownerGone(owner, timing.clock.now(), timing.staleAfterMs);
  return { ino: st.ino, stale: gone || leftMs < 0, byLease: !gone && leftMs < 0, pid: owner.pid, leftMs };
}

/** The refusal of a wait that ran out, saying what to do. */
const busy = (holder: { readonly pid?: number; readonly leftMs: number }, waited: number): CheckpointError =>
  leasedLockBusy('the journal of this directory', holder, waited, ', raise lockTimeoutMs, or give each process its own directory', {
    key: 'journal',
    withLeaseEnd: true,
  });

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Takes the stale journal lock over with `token` (the replay owed written down first: the holder's
 * records may be unapplied); the state it was taken over in, or undefined when another waiter
 * claimed it or it changed (then it is waited for as a live one).
 */
async function takeOverJournalLock(
  s: JournalState,
  token: KeptToken,
  stale: { readonly ino: bigint },
): Promise<LeasedLockState | undefined> {
  const path = s.root.at(JOURNAL_LOCK);
  let seen: LeasedLockState = 'gone';
  const inspect = async (): Promise<LeasedLockState> => (seen = await inspectLeasedLock(path, s.root.prefix, s.leaseMs, s.timing));
  const took = await takeOverStale(path, s.root.prefix, token, stale.ino, {
    inspect,
    beforeBreak: () => oweReplay(s.root, seen !== 'gone' && seen.byLease),
    lease: s,
    claimStaleMs: journalClaimStaleMs(s.leaseMs),
  });
  return took ? seen : undefined;
}

/**
 * Takes the journal lock with `token`: at once when free and nobody queues, else in ticket
 * order; takes over a lock whose holder is gone or whose lease ran out. Rejects after
 * lockTimeoutMs with what to do; ENOENT (the token was swept) passes through.
 */
export async function takeJournalLock(s: JournalState, token: KeptToken): Promise<TakenLock> {
  const path = s.root.at(JOURNAL_LOCK);
  const dir = s.root.prefix;
  if (!s.contended) {
    s.leaseFrom = Date.now();
    try {
      await fsLink(token.path, path);
      return { path, dir, token };
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
  }
  const start = Date.now();
  const ticket = await makeTicket(s);
  try {
    for (let round = 0; ; round++) {
      const others = await liveTickets(s, ticket.name);
      const ahead = others.filter((o) => before(o, ticket.owner)).length;
      let holder: { pid?: number; leftMs: number } = { leftMs: 0 };
      if (ahead === 0) {
        s.leaseFrom = Date.now();
        try {
          await fsLink(token.path, path);
          s.contended = others.length > 0;
          return { path, dir, token };
        } catch (err) {
          if (errnoOf(err) !== 'EEXIST') throw err;
        }
        const state = await inspectLeasedLock(path, dir, s.leaseMs, s.timing);
        if (state === 'gone') continue;
        const took = state.stale ? await takeOverJournalLock(s, token, state) : undefined;
        if (took !== undefined && took !== 'gone') {
          s.contended = others.length > 0;
          return { path, dir, token, brokeStale: true, ...(took.byLease ? { byLease: true } : {}) };
        }
        holder = state;
      }
      const waited = Date.now() - start;
      if (waited >= s.timing.lockTimeoutMs) throw busy(holder, waited);
      if (Date.now() - ticket.renewedAt > s.leaseMs / 4) {
        ticket.renewedAt = Date.now();
        await s.io.futimes(ticket.fd, ticket.renewedAt / 1000).catch(() => undefined);
      }
      // The next in line polls often; the others less (each poll lists the root).
      await pause(ahead === 0 ? 1 + Math.random() : Math.min(2 + round, 10) * (0.5 + Math.random()));
    }
  } finally {
    await dropTicket(s, ticket);
  }
}
