import { keepOrDropToken, newToken, takeWithToken, type HeldLock, type KeptToken } from '../lock.js';
import { letGoHeld } from '../take-over.js';
import { drain } from './apply-queue.js';
import { settleRetiring } from './checkpoint.js';
import { closeDirs, type DirCache } from './dirs.js';
import { dropReplacedFiles, type FileNo } from './files.js';
import { journalClaimStaleMs, leaseHeld, startRenewal, stopRenewal } from './lease.js';
import { othersWaiting, takeJournalLock } from './queue.js';
import { dropKept } from './kept.js';
import type { KeyFate, KeyState, NamedKeys } from './planned.js';
import { recoverLocked } from './recover.js';
import { oweReplay, replayOwed } from './replay-owed.js';
import type { JournalState } from './state.js';

/*
 * One hold of the journal lock: a temp file of ours in the root, linked as the lock (the
 * same link-a-temp-file lock as keys' locks, see ../lock.ts), taken for a commit and kept
 * for a while after it (lingerMs, at most maxHoldMs: see state.ts).
 */

/** Where the journal ended, its epoch and the keys it named when we last let the lock go. */
export interface LastSeen {
  readonly active: FileNo;
  readonly end: number;
  readonly epoch: number;
  readonly keys: NamedKeys;
}
/** A full journal file being checkpointed in the background while commits go to the other. */
export interface Retiring {
  readonly file: FileNo;
  readonly keys: ReadonlyMap<string, KeyFate>;
  /** Settles once its files are fsynced and it is emptied; never rejects (a failure sets needRecovery: the next commit replays both files). */
  readonly done: Promise<void>;
}
/** What this process knows while it holds the journal lock. */
export interface Held {
  readonly lock: HeldLock;
  /** The temp file our lock is a link of, kept between holds while young (one link(2) takes the lock). */
  readonly token: KeptToken;
  readonly since: number;
  /** The journal file commits go to (with `end`, once known). */
  active?: FileNo;
  /** The other file, while its checkpoint runs. */
  retiring?: Retiring;
  /** Where the next record goes while we hold the lock (nobody else writes it), once known. */
  end?: number;
  /** The epoch of the journal's records, once known. */
  epoch?: number;
  /** The keys the journal's records name (with what their last record left), known with `end`: a checkpoint fsyncs them without reading the journal back. */
  keys?: NamedKeys;
  /**
   * What keys hold (or will hold once the group in hand is applied), learned while the
   * lock is held: no other journaled writer changes them meanwhile, so a condition is
   * checked without a stat. Dropped after any failure.
   */
  states?: Map<string, KeyState>;
  /**
   * Directories opened while the lock is held, reused by the next groups: no other
   * journaled writer changes them meanwhile. One our own deletes pruned (emptied, removed)
   * makes a later rename into it fail with ENOENT, and the file lands through a fresh walk
   * that makes the directory again; a stat through it finds nothing, which is right for
   * every key not known (in `states`) to have been written since.
   */
  dirs?: DirCache;
  /** Set after a failure (what was known is dropped): directory listings are not trusted for the rest of the hold. */
  unlisted?: boolean;
}

/** Takes the journal lock (with the kept token while young) and settles what a new holder owes first. */
function take(s: JournalState): Promise<Held> {
  const failed = (): void => {
    s.leaseFrom = undefined;
    stopRenewal(s);
  };
  return takeWithToken(
    s,
    () => newToken(s, s.root.at, s.fileMode),
    (token) => settleTaken(s, token),
    failed,
  );
}

/** Takes the lock with `token`; a holder that died (or whose lease ran out) may have left records unapplied or files replaced. */
async function settleTaken(s: JournalState, token: KeptToken): Promise<Held> {
  const lock = await takeJournalLock(s, token);
  s.lockOurs = true;
  startRenewal(s);
  // Replayed before anything else, whether this process broke its lock or another did and did not take it (replay-owed.ts).
  const owed = await replayOwed(s);
  s.owedReplay = owed !== undefined;
  if (lock.brokeStale || owed) s.needRecovery = true;
  if (lock.byLease || owed?.byLease) s.swapAfterRecovery = true;
  // The files open here may have been replaced by a process that broke a lapsed lease (ours, or another's).
  if (await dropReplacedFiles(s)) {
    dropKept(s);
    s.lastSeen = undefined;
  }
  // Descriptors kept from an earlier hold are trusted once the journal is found as it was left (placeRecord).
  s.keptVerified = false;
  return { lock, token, since: Date.now() };
}

/**
 * Releases the lock; the token is kept for the next hold unless `keepToken` is false
 * (nothing more to commit soon). `unlessBusy` (the linger timer's): the hold goes on if a
 * commit comes while the files are being applied — the wait for them is the release's
 * longest part, and a commit meanwhile would otherwise wait for it all, then take the lock
 * again (a LangGraph thread's first checkpoint waited for the previous thread's files).
 */
export async function letGo(s: JournalState, keepToken = true, unlessBusy = false): Promise<void> {
  // One release at a time: one that kept the hold is followed by this one.
  if (s.releasing) await s.releasing.catch(() => undefined);
  const h = s.held;
  if (!h) return;
  const done = release(s, h, keepToken, unlessBusy);
  s.releasing = done;
  try {
    await done;
  } finally {
    if (s.releasing === done) s.releasing = undefined;
  }
}

/** {@link letGo}'s release of hold `h`, once it is the only one under way. */
async function release(s: JournalState, h: Held, keepToken: boolean, unlessBusy: boolean): Promise<void> {
  // Everything this hold committed is in the files before the lock goes: records not yet
  // applied exist only while their writer holds the lock (other instances' reads rely on
  // it). And the next holder finds one journal file with records at most. A commit may
  // come while either is awaited (a background checkpoint's fsyncs take long): its apply,
  // and the checkpoint it may start, are awaited too (regression: the lock went with a
  // commit's files unapplied, and another instance read the files it replaced).
  for (;;) {
    await drain(s);
    await settleRetiring(h);
    // Decided and let go in the same turn: a commit that comes later waits for the release.
    if (s.held !== h || (unlessBusy && (s.busy || s.running !== undefined))) return;
    if (s.applying === undefined && !h.retiring) break;
  }
  s.held = undefined;
  s.lastSeen = undefined;
  // Replayed only while the lease surely runs; else the next hold replays (after a breaker's own replay, if any).
  if (s.needRecovery && leaseHeld(s)) await recoverLocked(s).catch(() => undefined);
  else if (h.active !== undefined && h.end !== undefined && h.epoch !== undefined && h.keys)
    s.lastSeen = { active: h.active, end: h.end, epoch: h.epoch, keys: h.keys };
  if (h.dirs) await closeDirs(h.dirs);
  // Once the lock is gone another process may replace any file: the descriptors stay only
  // if the next hold finds the journal as this one leaves it (nobody committed meanwhile).
  if (!s.lastSeen) dropKept(s);
  // A replay that failed (a full disk) is owed by the next holder, and other processes' reads must read the journal meanwhile.
  if (s.needRecovery) await oweReplay(s.root, false).catch(() => undefined);
  s.lockOurs = false;
  stopRenewal(s);
  await letGoLock(s, h);
  s.leaseFrom = undefined;
  await keepOrDropToken(s, h.token, keepToken);
}

/**
 * Lets the lock of hold `h` go, never someone else's: inside the trusted half of the lease
 * nobody may take it over, so one unlink, made synchronously right after that check (an
 * asynchronous one runs when libuv's pool gets to it, maybe after the lease ran out and another
 * process took the lock over). Past it, its inode is claimed first (../take-over.ts). A
 * failure leaves the lock to run out its lease.
 */
function letGoLock(s: JournalState, h: Held): Promise<void> {
  return letGoHeld(h.lock.path, h.token.ino, leaseHeld(s), journalClaimStaleMs(s.leaseMs));
}

/**
 * Whether this hold has had its fair share while others wait: past sliceMs, the root is
 * listed for their tickets (once per half slice); then the lock goes, and this process
 * queues behind them for its next hold.
 */
async function sliceOver(s: JournalState, h: Held): Promise<boolean> {
  const now = performance.now();
  if (Date.now() - h.since <= s.sliceMs || now - s.lastWaitCheck < s.sliceMs / 2) return false;
  s.lastWaitCheck = now;
  if (!(await othersWaiting(s))) return false;
  s.contended = true;
  return true;
}

/** Runs `fn` holding the journal lock (a temp file of ours in the root, linked as the lock). */
export async function locked<T>(s: JournalState, fn: (lock: HeldLock, h: Held) => Promise<T>, keep = true): Promise<T> {
  if (s.linger) clearTimeout(s.linger);
  s.linger = undefined;
  s.busy = true;
  try {
    if (s.held && (Date.now() - s.held.since > s.maxHoldMs || (await sliceOver(s, s.held)))) await letGo(s);
    if (!s.held) await s.releasing?.catch(() => undefined);
    const fresh = !s.held;
    s.held ??= await take(s);
    return await fn(fresh ? s.held.lock : { ...s.held.lock, brokeStale: false }, s.held);
  } catch (err) {
    // After a failure nothing is assumed about the journal: the next commit starts afresh.
    await letGo(s).catch(() => undefined);
    throw err;
  } finally {
    s.busy = false;
    if (!keep) await letGo(s, false);
    else if (s.held) {
      s.linger = setTimeout(() => {
        s.linger = undefined;
        if (!s.busy) void letGo(s, true, true).catch(() => undefined);
      }, s.lingerMs);
      s.linger.unref?.();
    }
  }
}
